public import HeraldCore

/// One operation of an installation's partial update: a JSON Patch (RFC 6902) `add`,
/// `remove` or `replace`.
///
/// Paths are JSON Pointers into the installation's JSON: `/pushChannel`, `/userId`, `/tags`,
/// `/tags/{tag}`, `/templates/{name}` (and its `/body`, `/headers`, `/expiry`, `/tags`),
/// `/pushVariables`, `/pushVariables/{name}`, `/expirationTime`. A `/` or `~` inside a
/// name is written `~1` or `~0`.
///
/// ```swift
/// try await hub.patchInstallation(id: "ipad-1", [
///     .add("/tags/sports"),
///     .remove("/tags/news"),
///     .replace("/userId", value: .string("bob")),
/// ])
/// ```
public struct InstallationPatchOperation: Sendable, Hashable {
    /// `add`, `remove` or `replace`.
    public var op: String
    public var path: String
    /// The value to add or replace with; `nil` for `remove` (and for `add` of `/tags/{tag}`,
    /// where the path says it all).
    public var value: JSONValue?

    public init(op: String, path: String, value: JSONValue? = nil) {
        self.op = op
        self.path = path
        self.value = value
    }

    public static func add(_ path: String, value: JSONValue? = nil) -> InstallationPatchOperation {
        InstallationPatchOperation(op: "add", path: path, value: value)
    }

    public static func remove(_ path: String, value: JSONValue? = nil) -> InstallationPatchOperation {
        InstallationPatchOperation(op: "remove", path: path, value: value)
    }

    public static func replace(_ path: String, value: JSONValue?) -> InstallationPatchOperation {
        InstallationPatchOperation(op: "replace", path: path, value: value)
    }

    /// `{"op": …, "path": …, "value": …}`.
    var json: JSONValue {
        var members: [(key: String, value: JSONValue)] = [("op", .string(op)), ("path", .string(path))]
        if let value { members.append(("value", value)) }
        return .object(members)
    }
}
