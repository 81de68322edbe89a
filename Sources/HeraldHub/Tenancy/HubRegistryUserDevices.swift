public import HeraldCore

/// The app backend's devices in a hub of this server's catalog: each call goes to the hub's
/// engine as the ``HubRegistry`` has it open then, so a change of the hub's credentials is
/// followed at once.
public struct HubRegistryUserDevices: UserDevices {
    public let registry: HubRegistry
    /// The hub's name.
    public let hubName: String

    public init(registry: HubRegistry, hubName: String) {
        self.registry = registry
        self.hubName = hubName
    }

    /// The hub's engine, opened if needed.
    ///
    /// - Throws: ``HeraldError`` `unavailable` if the hub does not exist (it was deleted).
    public func engine() async throws -> HubEngine {
        guard let engine = try await registry.engine(named: hubName) else {
            throw HeraldError.unavailable("the app backend's hub '\(hubName)' does not exist; create it with herald hub create \(hubName)")
        }
        return engine
    }

    public var platforms: Set<Platform> { registry.openEngine(named: hubName)?.platforms ?? [] }

    public func registrationID(handle: String?, user: String) async throws -> String {
        try await engine().registrationID(handle: handle, user: user)
    }

    public func saveRegistration(_ registration: Registration, user: String) async throws -> Registration {
        try await engine().saveRegistration(registration, user: user)
    }

    public func deleteRegistration(id: String, user: String) async throws {
        try await engine().deleteRegistration(id: id, user: user)
    }

    public func confirm(_ notificationIDs: [String], registrationID: String, user: String) async throws {
        try await engine().confirm(notificationIDs, registrationID: registrationID, user: user)
    }

    public func send(_ request: SendRequest, wait: Duration) async throws -> SendResult {
        try await engine().send(request, wait: wait)
    }
}
