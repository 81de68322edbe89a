public import Foundation
public import HeraldCore

/// Partial updates of an installation: a JSON Patch (RFC 6902) document.
///
/// ```json
/// [{"op": "add", "path": "/tags", "value": ["sports", "news"]},
///  {"op": "remove", "path": "/tags/weather"},
///  {"op": "replace", "path": "/pushChannel", "value": "6d1c…"},
///  {"op": "add", "path": "/templates/greeting", "value": {"body": "…", "tags": ["news"]}}]
/// ```
///
/// Operations are `add`, `remove` and `replace` (any letter case: the .NET SDK writes `Add`);
/// `replace` is `remove` then `add`. Paths are JSON Pointers (`~1` for `/`, `~0` for `~` in
/// a tag or template name):
///
/// | path | add | remove |
/// |---|---|---|
/// | `/pushChannel` | sets the channel (for browser, `{endpoint, p256dh, auth}`) and clears `pushChannelExpired` | refused: the channel is required |
/// | `/userId` | sets it | removes it |
/// | `/tags` | adds the given tags to the installation's | removes all tags |
/// | `/tags/{tag}` | adds `tag` | removes `tag` |
/// | `/templates/{name}` | sets the whole template | removes it |
/// | `/templates/{name}/body`, `/expiry` | sets it | body: refused; expiry: removes it |
/// | `/templates/{name}/headers` | replaces all headers | removes all headers |
/// | `/templates/{name}/headers/{header}` | sets one header | removes it |
/// | `/templates/{name}/tags`, `/templates/{name}/tags/{tag}` | as `/tags` | as `/tags` |
/// | `/pushVariables` | replaces all variables | removes all |
/// | `/pushVariables/{name}` | sets one variable | removes it |
/// | `/expirationTime` | sets it (ISO 8601) | never expires |
///
/// Removing a tag, template, header or variable that is not there changes nothing.
///
/// Values are taken in the form the SDKs send them: the .NET SDK sends every value as a
/// string, so an object-valued path (`/templates/{name}`, `…/headers`, `/pushVariables`,
/// a browser `/pushChannel`) also takes a string holding that object's JSON.
///
/// **Tags given as one string are split at commas.** A tag never contains a comma, and
/// `{"op": "replace", "path": "/tags", "value": "a,b"}` is what a caller of the .NET SDK's
/// string-valued operations writes when it means the tags `a` and `b`; elsewhere that value
/// becomes a single tag that no send ever matches. So `"a,b"` is read as `["a", "b"]`.
extension Installation {
    /// Applies a JSON Patch document and returns the result, validated like a PUT
    /// (``validated()``). Throws a `400` ``HeraldError`` naming the operation (by index and
    /// path) that is malformed, unsupported (`move`, `copy`, `test`, an unknown path) or
    /// leaves an invalid installation; nothing is applied then.
    public func applying(_ patch: Data) throws(HeraldError) -> Installation {
        let document: JSONValue
        do {
            document = try JSONValue(parsing: patch)
        } catch {
            throw .badRequest(
                "the patch is not valid JSON; expected a JSON Patch array such as [{\"op\": \"add\", \"path\": \"/tags\", \"value\": [\"news\"]}]"
            )
        }
        let operations: [JSONValue]
        switch document {
        case .array(let items): operations = items
        case .object: operations = [document]
        default:
            throw .badRequest("the patch must be a JSON array of operations {\"op\": …, \"path\": …, \"value\": …}")
        }

        var result = self
        for (index, operation) in operations.enumerated() {
            let object: WireObject
            do {
                object = try WireObject(
                    operation, path: "", what: "an operation {\"op\": …, \"path\": …, \"value\": …}")
            } catch {
                throw .badRequest("patch operation \(index): \(error.message)")
            }
            let opName = (try? object.string("op")) ?? nil
            let path = (try? object.string("path")) ?? nil
            let context = "patch operation \(index) (\(Tag.display(opName ?? "?")) \(Tag.display(path ?? "?")))"
            do throws(HeraldError) {
                guard let opName else { throw HeraldError.badRequest("'op' is required: add, remove or replace") }
                guard let path else { throw HeraldError.badRequest("'path' is required, e.g. /tags") }
                let op = try PatchOperation(opName)
                let tokens = try Self.pointerTokens(path)
                try result.apply(op, at: tokens, value: object["value"])
            } catch {
                throw .badRequest("\(context): \(error.message)")
            }
        }
        do {
            return try result.validated()
        } catch {
            throw .badRequest("after the patch, \(error.message)")
        }
    }
}

// MARK: - Operations

private enum PatchOperation {
    case add, remove, replace

    init(_ name: String) throws(HeraldError) {
        switch name.lowercased() {
        case "add": self = .add
        case "remove": self = .remove
        case "replace": self = .replace
        case "move", "copy", "test":
            throw .badRequest("the operation '\(name.lowercased())' is not supported; use add, remove or replace")
        default:
            throw .badRequest("unknown operation '\(Tag.display(name))'; use add, remove or replace")
        }
    }
}

extension Installation {
    /// The reference tokens of a JSON Pointer, unescaped (`~1` → `/`, `~0` → `~`).
    fileprivate static func pointerTokens(_ pointer: String) throws(HeraldError) -> [String] {
        guard pointer.hasPrefix("/") else {
            throw .badRequest("a path is a JSON Pointer starting with '/', e.g. /tags")
        }
        var tokens: [String] = []
        for raw in pointer.dropFirst().split(separator: "/", omittingEmptySubsequences: false) {
            var token = ""
            var iterator = raw.makeIterator()
            while let character = iterator.next() {
                guard character == "~" else {
                    token.append(character)
                    continue
                }
                switch iterator.next() {
                case "0": token.append("~")
                case "1": token.append("/")
                default: throw .badRequest("in a path, '~' must be followed by 0 (for ~) or 1 (for /)")
                }
            }
            tokens.append(token)
        }
        return tokens
    }

    private func require(_ value: JSONValue?) throws(HeraldError) -> JSONValue {
        guard let value else { throw .badRequest("'value' is required") }
        return value
    }

    private func requireString(_ value: JSONValue?) throws(HeraldError) -> String {
        guard case .string(let string) = try require(value) else { throw .badRequest("'value' must be a string") }
        return string
    }

    /// An object value, or a string holding an object's JSON (how the .NET SDK sends objects).
    private func requireObject(_ value: JSONValue?, shape: String) throws(HeraldError) -> JSONValue {
        let value = try require(value)
        switch value {
        case .object: return value
        case .string(let text):
            if let parsed = try? JSONValue(parsing: text.utf8), case .object = parsed {
                return parsed
            }
            throw .badRequest("'value' must be \(shape), as an object or a string holding its JSON")
        default:
            throw .badRequest("'value' must be \(shape)")
        }
    }

    /// Tags from an array of strings or one comma-separated string.
    private func requireTags(_ value: JSONValue?) throws(HeraldError) -> [String] {
        switch try require(value) {
        case .string(let text):
            return text.split(separator: ",").map { $0.trimmingSpaces() }.filter { !$0.isEmpty }
        case let value:
            do {
                return try WireObject.stringArray(value, path: "value")
            } catch {
                throw .badRequest("'value' must be an array of tags or a comma-separated string of tags")
            }
        }
    }

    fileprivate mutating func apply(_ op: PatchOperation, at tokens: [String], value: JSONValue?) throws(HeraldError) {
        guard let root = tokens.first else {
            throw .badRequest("the whole installation cannot be patched; PUT it instead")
        }
        let rest = Array(tokens.dropFirst())
        switch root.lowercased() {
        case "pushchannel" where rest.isEmpty:
            guard op != .remove else { throw .badRequest("the push channel is required and cannot be removed") }
            try setPushChannel(value)
        case "userid" where rest.isEmpty:
            userId = try op == .remove ? nil : requireString(value)
        case "tags":
            tags = try Self.patchedTags(tags, op: op, rest: rest, value: value, using: self)
        case "templates":
            try patchTemplates(op, rest: rest, value: value)
        case "pushvariables":
            try patchPushVariables(op, rest: rest, value: value)
        case "expirationtime" where rest.isEmpty:
            expirationTime = try op == .remove ? nil : WireDate.parse(try requireString(value), path: "value")
        case "installationid", "platform":
            throw .badRequest("'\(root)' cannot be changed by a patch; PUT the whole installation instead")
        case "pushchannelexpired", "lastupdate", "lastactiveon":
            throw .badRequest("'\(root)' is read-only")
        case "secondarytiles":
            throw .badRequest("secondary tiles (WNS) are not supported by this hub")
        default:
            throw .badRequest(
                "unsupported path; patchable paths are /pushChannel, /userId, /tags, /tags/{tag}, /templates/{name}[/body|/headers|/expiry|/tags], /pushVariables[/{name}], /expirationTime"
            )
        }
    }

    private mutating func setPushChannel(_ value: JSONValue?) throws(HeraldError) {
        if platform == .webpush {
            let raw = try require(value)
            if case .string(let text) = raw, !text.hasPrefix("{") {
                // A new endpoint alone keeps the subscription keys.
                pushChannel = text
            } else {
                let object = try requireObject(value, shape: "{\"endpoint\": …, \"p256dh\": …, \"auth\": …}")
                let (channel, keys) = try Self.pushChannel(from: object, platform: platform, path: "value")
                pushChannel = channel
                webPushKeys = keys
            }
        } else {
            pushChannel = try requireString(value)
        }
        pushChannelExpired = false
    }

    private static func patchedTags(
        _ tags: [String],
        op: PatchOperation,
        rest: [String],
        value: JSONValue?,
        using installation: Installation
    ) throws(HeraldError) -> [String] {
        switch rest.count {
        case 0:
            switch op {
            case .remove: return []
            case .replace: return try installation.requireTags(value)
            case .add: return tags + (try installation.requireTags(value)).filter { !tags.contains($0) }
            }
        case 1:
            let tag = rest[0]
            var result = tags.filter { $0 != tag }
            switch op {
            case .remove:
                return result
            case .add where tag == "-" && value != nil:
                // RFC 6902's "append to the array".
                return tags + (try installation.requireTags(value)).filter { !tags.contains($0) }
            case .add:
                return tags.contains(tag) ? tags : tags + [tag]
            case .replace:
                if case .string(_)? = value {
                    let added = try installation.requireTags(value)
                    result += added.filter { !result.contains($0) }
                } else {
                    result.append(tag)
                }
                return result
            }
        default:
            throw .badRequest("unsupported path; a tag is addressed as /tags/{tag}")
        }
    }

    private mutating func patchTemplates(_ op: PatchOperation, rest: [String], value: JSONValue?) throws(HeraldError) {
        guard let name = rest.first else {
            if op == .remove {
                templates = [:]
                return
            }
            let object = try WireObject(
                try requireObject(value, shape: "an object of named templates"),
                path: "value",
                what: "an object of named templates"
            )
            var replaced: [String: InstallationTemplate] = [:]
            for (name, template) in object.members {
                replaced[name] = try Self.template(from: template, path: "value[\"\(Tag.display(name))\"]")
            }
            templates = replaced
            return
        }
        let field = rest.dropFirst().first.map { $0.lowercased() }
        if field == nil {
            switch op {
            case .remove:
                templates[name] = nil
            case .add, .replace:
                let shape = "a template {\"body\": …, \"headers\": {…}, \"expiry\": …, \"tags\": […]}"
                templates[name] = try Self.template(from: try requireObject(value, shape: shape), path: "value")
            }
            return
        }
        guard var template = templates[name] else {
            if op == .remove, rest.count >= 2 { return }
            throw .badRequest(
                "there is no template named '\(Tag.display(name))'; add it whole first (path /templates/{name} with {\"body\": …})"
            )
        }
        let extra = Array(rest.dropFirst(2))
        switch field {
        case "body" where extra.isEmpty:
            guard op != .remove else { throw .badRequest("a template's body is required and cannot be removed") }
            template.body = try requireString(value)
        case "expiry" where extra.isEmpty:
            template.expiry = try op == .remove ? nil : requireString(value)
        case "headers" where extra.isEmpty:
            template.headers =
                try op == .remove
                ? [:] : WireObject.stringMap(requireObject(value, shape: "an object of header values"), path: "value")
        case "headers" where extra.count == 1:
            template.headers[extra[0]] = try op == .remove ? nil : requireString(value)
        case "tags":
            template.tags = try Self.patchedTags(template.tags, op: op, rest: extra, value: value, using: self)
        default:
            throw .badRequest(
                "unsupported path; a template's patchable fields are body, headers, headers/{name}, expiry and tags")
        }
        templates[name] = template
    }

    private mutating func patchPushVariables(
        _ op: PatchOperation, rest: [String], value: JSONValue?
    )
        throws(HeraldError)
    {
        switch rest.count {
        case 0:
            pushVariables =
                try op == .remove
                ? [:] : WireObject.stringMap(requireObject(value, shape: "an object of string values"), path: "value")
        case 1:
            pushVariables[rest[0]] = try op == .remove ? nil : requireString(value)
        default:
            throw .badRequest("unsupported path; a push variable is addressed as /pushVariables/{name}")
        }
    }
}
