public import HeraldCore

extension Installation {
    /// A valid installation with defaults for everything a test does not care about.
    public static func sample(
        id: String = "inst-1",
        platform: Platform = .apns,
        pushChannel: String = String(repeating: "cd", count: 32),
        userId: String? = "alice",
        tags: [String] = ["sports"],
        templates: [String: InstallationTemplate] = [:]
    ) -> Installation {
        Installation(
            id: id, platform: platform, pushChannel: pushChannel, userId: userId, tags: tags, templates: templates,
            pushVariables: ["name": "Alice"]
        )
    }
}
