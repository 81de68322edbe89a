extension Installation {
    /// The prefix of the ids of registrations derived from an installation. `$` is not a
    /// character of well-formed registration ids (``RegistrationID/isWellFormed(_:)``), so these
    /// registrations cannot be read or written through the registrations API.
    public static let registrationIDPrefix = "$installation:"

    /// The id of the native registration derived from installation `id`.
    public static func nativeRegistrationID(installationID id: String) -> String {
        registrationIDPrefix + id
    }

    /// The id of the registration derived from template `name` of installation `id`.
    public static func templateRegistrationID(installationID id: String, templateName name: String) -> String {
        registrationIDPrefix + id + "/" + name
    }

    /// The registrations sends resolve this installation through: one native registration
    /// (id ``nativeRegistrationID(installationID:)``) with the installation's tags plus
    /// ``implicitTags``, then one template registration per template in name order (id
    /// ``templateRegistrationID(installationID:templateName:)``) with those tags plus the
    /// template's own.
    ///
    /// Each carries the installation's platform, channel and its kind, Web Push keys, expiration time, push
    /// variables, `legacyGCM`, version and dates, and ``Registration/installationID`` set. A
    /// template registration's headers are sorted by name. None when the push service reported
    /// the channel expired (``pushChannelExpired``).
    public func registrations() -> [Registration] {
        guard !pushChannelExpired else { return [] }
        let nativeTags = tags + implicitTags

        func registration(id: String, tags: [String], template: RegistrationTemplate?) -> Registration {
            Registration(
                id: id,
                platform: platform,
                handle: pushChannel,
                handleKind: pushChannelKind,
                webPushKeys: webPushKeys,
                tags: tags,
                expiresAt: expirationTime,
                template: template,
                pushVariables: pushVariables,
                installationID: self.id,
                legacyGCM: legacyGCM,
                version: version,
                createdAt: createdAt,
                updatedAt: updatedAt
            )
        }

        var result = [registration(id: Self.nativeRegistrationID(installationID: id), tags: nativeTags, template: nil)]
        for (name, template) in templates.sorted(by: { $0.key < $1.key }) {
            let headers = template.headers.sorted { $0.key < $1.key }.map {
                PlatformPayload.Header(name: $0.key, value: $0.value)
            }
            result.append(
                registration(
                    id: Self.templateRegistrationID(installationID: id, templateName: name),
                    tags: nativeTags + template.tags,
                    template: RegistrationTemplate(
                        name: name, body: template.body, headers: headers, expiry: template.expiry)
                )
            )
        }
        return result
    }
}
