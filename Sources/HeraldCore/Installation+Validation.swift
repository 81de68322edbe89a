import Foundation

extension Installation {
    /// The longest user id: `$UserId:{…}` must still be a tag of at most ``Tag/maxLength`` characters.
    public static let maxUserIDLength = Tag.maxLength - "$UserId:{}".count
    /// The longest template name, in characters.
    public static let maxTemplateNameLength = 200

    /// The tags every registration of this installation carries besides its own:
    /// `$InstallationId:{id}` and, with a user, `$UserId:{userId}`.
    public var implicitTags: [String] {
        var tags = ["$InstallationId:{\(id)}"]
        if let userId { tags.append("$UserId:{\(userId)}") }
        return tags
    }

    /// The tags the installation claims itself: its own and its templates', without the
    /// implicit ones.
    public var allTags: [String] {
        tags + templates.values.flatMap(\.tags)
    }

    /// Checks the installation as a PUT does and returns it in stored form: the push channel
    /// normalized (``Registration/normalizedHandle(_:platform:)``), an empty user id removed,
    /// duplicate tags dropped.
    ///
    /// Throws a `400` ``HeraldError`` whose message starts with the offending field's path
    /// when: the id is not well formed (``isWellFormedID(_:)``); the push channel is not a
    /// handle of the platform, or a browser channel lacks its keys; the user id has characters
    /// other than letters, digits and `- _ @ # . : =` or more than ``maxUserIDLength``; a tag
    /// breaks ``Tag``'s rules or is a system tag (`$…`, which the hub adds itself); a
    /// push variable's name is not 1–120 letters, digits or `_`; a template's name is empty,
    /// longer than ``maxTemplateNameLength`` or `$body`, its body is empty or does not parse
    /// (``NotificationTemplate``), a header is malformed, or an expression in a header value or
    /// the expiry does not parse; or one of the registrations the installation expands into
    /// (``registrations()``) would carry more than ``Tag/maxPerRegistration`` tags, counting the
    /// implicit `$InstallationId` and `$UserId` tags.
    public func validated() throws(HeraldError) -> Installation {
        var result = self
        guard Self.isWellFormedID(id) else {
            throw .badRequest(
                id.isEmpty
                    ? "installationId: required; 1–102 characters of letters, digits and - _ @ # . : = (so that the tag $InstallationId:{id} fits in 120)"
                    : "installationId: '\(Tag.display(id))' is not a valid id; use 1–102 characters of letters, digits and - _ @ # . : = (so that the tag $InstallationId:{id} fits in 120)"
            )
        }

        if platform == .webpush {
            guard let keys = webPushKeys, !keys.p256dh.isEmpty, !keys.auth.isEmpty else {
                throw .badRequest(
                    "pushChannel: a browser installation's channel is {\"endpoint\": …, \"p256dh\": …, \"auth\": …} from the push subscription"
                )
            }
        } else {
            result.webPushKeys = nil
        }
        do {
            result.pushChannel = try Registration.normalizedHandle(pushChannel, platform: platform)
        } catch {
            throw .badRequest("pushChannel: \(error.message)")
        }
        try pushChannelKind.validate(platform: platform, field: "pushChannelKind")

        if let userId {
            if userId.isEmpty {
                result.userId = nil
            } else {
                guard userId.utf8.allSatisfy(Self.isIdentifierByte) else {
                    throw .badRequest(
                        "userId: '\(Tag.display(userId))' has a character other than letters, digits and - _ @ # . : =")
                }
                guard userId.utf8.count <= Self.maxUserIDLength else {
                    throw .badRequest(
                        "userId: at most \(Self.maxUserIDLength) characters, so that the tag $UserId:{…} stays within \(Tag.maxLength); this one has \(userId.utf8.count)"
                    )
                }
            }
        }

        result.tags = try Self.validatedTags(tags, path: "tags")

        for name in pushVariables.keys.sorted() where !Self.isVariableName(name) {
            throw .badRequest(
                "pushVariables.\(Tag.display(name)): a variable name is 1–120 ASCII letters, digits or _ (as template expressions $(name) use them)"
            )
        }

        var templates: [String: InstallationTemplate] = [:]
        for (name, template) in self.templates.sorted(by: { $0.key < $1.key }) {
            templates[name] = try Self.validated(template, name: name)
        }
        result.templates = templates

        try result.checkExpandedTagCounts()
        return result
    }

    /// Validates own tags (no system tags), drops duplicates keeping the first.
    static func validatedTags(_ tags: [String], path: String) throws(HeraldError) -> [String] {
        var seen: Set<String> = []
        var result: [String] = []
        for (index, tag) in tags.enumerated() {
            do {
                try Tag.validate(tag)
            } catch {
                throw .badRequest("\(path)[\(index)]: \(error.message)")
            }
            if Tag.isSystemTag(tag) {
                throw .badRequest(
                    "\(path)[\(index)]: '\(Tag.display(tag))' is a system tag, which the hub adds itself; set installationId or userId instead"
                )
            }
            if seen.insert(tag).inserted { result.append(tag) }
        }
        if result.count > Tag.maxPerRegistration {
            throw .badRequest("\(path): at most \(Tag.maxPerRegistration) tags; \(result.count) were given")
        }
        return result
    }

    private static func validated(
        _ template: InstallationTemplate, name: String
    ) throws(HeraldError)
        -> InstallationTemplate
    {
        let path = templatePath(name)
        guard !name.isEmpty else { throw .badRequest("templates: a template name must not be empty") }
        guard name.count <= maxTemplateNameLength else {
            throw .badRequest(
                "\(path): a template name has at most \(maxTemplateNameLength) characters; this one has \(name.count)")
        }
        guard name.caseInsensitiveCompare("$body") != .orderedSame else {
            throw .badRequest("\(path): '$body' is reserved and cannot name a template")
        }
        guard !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw .badRequest("\(path): a template name must not contain control characters")
        }
        guard !template.body.trimmingWhitespace().isEmpty else {
            throw .badRequest("\(path).body: required; the template's JSON or XML body")
        }
        // A body that cannot be rendered is refused now, not at send time.
        do {
            _ = try NotificationTemplate(body: template.body)
        } catch {
            throw .badRequest("\(path).body: \(error.message)")
        }
        for (header, value) in template.headers.sorted(by: { $0.key < $1.key }) {
            guard !header.isEmpty, header.utf8.allSatisfy(isHeaderNameByte) else {
                throw .badRequest(
                    "\(path).headers: '\(Tag.display(header))' is not a valid HTTP header name (letters, digits and ! # $ % & ' * + - . ^ _ ` | ~)"
                )
            }
            guard !value.utf8.contains(where: { $0 == 0x0d || $0 == 0x0a || $0 == 0 }) else {
                throw .badRequest("\(path).headers.\(header): a header value must not contain line breaks")
            }
            // A value with an expression that cannot render is refused now, not at send time.
            do {
                try NotificationTemplate.validateText(value)
            } catch {
                throw .badRequest("\(path).headers.\(header): \(error.message)")
            }
        }
        if let expiry = template.expiry {
            do {
                try NotificationTemplate.validateText(expiry)
            } catch {
                throw .badRequest("\(path).expiry: \(error.message)")
            }
        }
        var result = template
        result.tags = try validatedTags(template.tags, path: "\(path).tags")
        return result
    }

    /// Every registration the installation expands into stays within ``Tag/maxPerRegistration``.
    private func checkExpandedTagCounts() throws(HeraldError) {
        let native = Set(tags).union(implicitTags)
        guard native.count <= Tag.maxPerRegistration else {
            throw .badRequest(
                "tags: an installation has at most \(Tag.maxPerRegistration - implicitTags.count) tags of its own here, because its registrations also carry \(implicitTags.joined(separator: " and ")); \(tags.count) were given"
            )
        }
        for (name, template) in templates.sorted(by: { $0.key < $1.key }) {
            let count = native.union(template.tags).count
            guard count <= Tag.maxPerRegistration else {
                throw .badRequest(
                    "\(Self.templatePath(name)).tags: the template's registration would carry \(count) tags (the installation's, \(implicitTags.joined(separator: ", ")) and the template's); at most \(Tag.maxPerRegistration)"
                )
            }
        }
    }

    /// A push variable name: 1–120 ASCII letters, digits or `_`.
    static func isVariableName(_ name: String) -> Bool {
        (1...120).contains(name.utf8.count)
            && name.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"):
                    true
                default: false
                }
            }
    }

    /// RFC 9110 token characters.
    private static func isHeaderNameByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default: "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }
}

extension Installation {
    /// Whether `id` can be an installation id: 1–102 characters (so that `$InstallationId:{id}` is a valid tag) of ASCII letters, digits and
    /// `- _ @ # . : =`.
    public static func isWellFormedID(_ id: String) -> Bool {
        (1...102).contains(id.utf8.count) && id.utf8.allSatisfy(isIdentifierByte)
    }

    /// The installation id and user id alphabet: ASCII letters, digits and `- _ @ # . : =`.
    package static func isIdentifierByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "@"), UInt8(ascii: "#"), UInt8(ascii: "."),
            UInt8(ascii: ":"), UInt8(ascii: "="):
            true
        default: false
        }
    }

    /// `templates["name"]`, the path of a template in messages.
    package static func templatePath(_ name: String) -> String {
        "templates[\"\(Tag.display(name))\"]"
    }
}
