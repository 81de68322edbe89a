import Foundation
public import HeraldCore

/// A hub connection string: `Endpoint=sb://host:port/;SharedAccessKeyName=…;SharedAccessKey=…`,
/// the form the established cloud hub's SDKs take to reach a hub and sign requests.
///
/// Parsing is tolerant in the ways hand-copied strings vary: parts in any order, spaces around
/// names and values, a trailing `;`, names in any letter case, and key values that contain `=`
/// (base64 padding). Unknown parts are ignored.
///
/// ```swift
/// let connection = try ConnectionString(parsing: "Endpoint=sb://localhost:8443/;SharedAccessKeyName=DefaultFullSharedAccessSignature;SharedAccessKey=abc=")
/// connection.httpsBaseURL   // "https://localhost:8443/"
/// ```
///
/// The ``description`` renders the whole string, key included, because that is what a user
/// copies into an SDK: never log it.
public struct ConnectionString: Sendable, Hashable, CustomStringConvertible {
    /// The endpoint as given, e.g. `sb://localhost:8443/`.
    public var endpoint: String
    /// The name of the shared access policy (`SharedAccessKeyName`).
    public var keyName: String
    /// The policy's key (`SharedAccessKey`); its UTF-8 bytes are the HMAC key.
    public var key: String
    /// The hub the string is scoped to (`EntityPath`), if any.
    public var entityPath: String?

    public init(endpoint: String, keyName: String, key: String) {
        self.endpoint = endpoint
        self.keyName = keyName
        self.key = key
        self.entityPath = nil
    }

    /// Parses a connection string; throws a `400` ``HeraldError`` that names the missing or
    /// malformed part (never its value, which may be the key).
    public init(parsing text: String) throws(HeraldError) {
        var values: [Part: String] = [:]
        var position = 0
        for rawPart in text.split(separator: ";", omittingEmptySubsequences: false) {
            let part = rawPart.trimmingWhitespace()
            if part.isEmpty { continue }
            position += 1
            guard let equals = part.firstIndex(of: "=") else {
                throw .badRequest(
                    "a connection string is made of Name=Value parts separated by ';'; part \(position) has no '='"
                )
            }
            let name = part[..<equals].trimmingSpaces()
            let value = part[part.index(after: equals)...].trimmingSpaces()
            guard !name.isEmpty else {
                throw .badRequest("part \(position) of the connection string has a value but no name before its '='")
            }
            guard let known = Part(name: name) else { continue }
            guard values[known] == nil else {
                throw .badRequest("the connection string gives \(known.rawValue) more than once")
            }
            values[known] = value
        }

        guard let endpoint = values[.endpoint], !endpoint.isEmpty else {
            throw .badRequest(
                "the connection string has no Endpoint; expected Endpoint=sb://host[:port]/;SharedAccessKeyName=…;SharedAccessKey=…"
            )
        }
        guard Self.hasSchemeAndHost(endpoint) else {
            throw .badRequest(
                "the connection string's Endpoint is not a URL with a host; expected e.g. Endpoint=sb://localhost:8443/ (schemes sb, https, http)"
            )
        }
        guard let keyName = values[.keyName], !keyName.isEmpty else {
            throw .badRequest("the connection string has no SharedAccessKeyName (the name of the access policy)")
        }
        guard let key = values[.key], !key.isEmpty else {
            throw .badRequest("the connection string has no SharedAccessKey (the access policy's key)")
        }
        self.endpoint = endpoint
        self.keyName = keyName
        self.key = key
        let entityPath = values[.entityPath]
        self.entityPath = entityPath?.isEmpty == true ? nil : entityPath
    }

    /// `Endpoint=…;SharedAccessKeyName=…;SharedAccessKey=…` (and `;EntityPath=…` when set).
    /// Contains the key.
    public var description: String {
        var text = "Endpoint=\(endpoint);SharedAccessKeyName=\(keyName);SharedAccessKey=\(key)"
        if let entityPath { text += ";EntityPath=\(entityPath)" }
        return text
    }

    /// The base URL requests go to: `sb://` becomes `https://` (`http://` and `https://` are
    /// kept), always ending in `/`.
    public var httpsBaseURL: String {
        var url = endpoint.trimmingSpaces()
        if let range = url.range(of: "://") {
            let scheme = url[..<range.lowerBound].lowercased()
            let rest = url[range.upperBound...]
            url = (scheme == "sb" ? "https" : scheme) + "://" + rest
        } else {
            url = "https://" + url
        }
        if !url.hasSuffix("/") { url += "/" }
        return url
    }

    private enum Part: String {
        case endpoint = "Endpoint"
        case keyName = "SharedAccessKeyName"
        case key = "SharedAccessKey"
        case entityPath = "EntityPath"

        init?(name: String) {
            switch name.lowercased() {
            case "endpoint": self = .endpoint
            case "sharedaccesskeyname": self = .keyName
            case "sharedaccesskey": self = .key
            case "entitypath": self = .entityPath
            default: return nil
            }
        }
    }

    private static func hasSchemeAndHost(_ endpoint: String) -> Bool {
        guard let range = endpoint.range(of: "://") else { return false }
        let scheme = endpoint[..<range.lowerBound].lowercased()
        guard ["sb", "https", "http"].contains(scheme) else { return false }
        let host = endpoint[range.upperBound...].prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        return !host.isEmpty && !host.contains(where: \.isWhitespace)
    }
}
