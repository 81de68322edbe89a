import Crypto
public import Foundation
public import HeraldCore

/// A shared access signature: the `Authorization` header value the hub API takes,
/// `SharedAccessSignature sr={resource}&sig={signature}&se={expiry}&skn={key name}`.
///
/// The signature is the base64 of HMAC-SHA256 over `sr + "\n" + se`, keyed with the UTF-8
/// bytes of the policy's key as written in the connection string (not base64-decoded).
///
/// The hub SDKs disagree on what they put in `sr` (the request URL or the namespace URL,
/// `http`, `https` or `sb`, lowercased or not, with or without the query, encoded with
/// lowercase or uppercase hex, parameters in any order), so verification follows two rules:
/// the HMAC is computed over the `sr` value exactly as sent (``resource``), and a token is
/// good for a request when its decoded `sr` is a prefix of the request URL (``covers(url:)``).
///
/// ```swift
/// let header = SharedAccessSignature.make(resource: "https://localhost:8443/myhub", keyName: "DefaultFullSharedAccessSignature",
///                                         key: key, expiry: Date().addingTimeInterval(3600))
/// let token = try SharedAccessSignature(parsing: header)
/// token.isValid(key: key, now: Date())                            // true
/// token.covers(url: "https://localhost:8443/myhub/messages")      // true
/// ```
public struct SharedAccessSignature: Sendable, Hashable, CustomStringConvertible {
    /// The `sr` value exactly as sent, still percent-encoded: what the signature covers.
    public let resource: String
    /// The `sig` value, percent-decoded: base64 text.
    public let signature: String
    /// The `se` value: when the token expires, in seconds since 1970.
    public let expiry: Int
    /// The `skn` value, percent-decoded: the access policy the token was signed with.
    public let keyName: String

    /// `se` as signed (percent-decoded); usually the decimal digits of ``expiry``.
    private let signedExpiry: String
    /// The decoded bytes of ``signature``.
    private let signatureBytes: Data
    /// The host, port and path that ``resource`` names, as ``covers(url:)`` compares them.
    private let signedParts: URLParts?

    /// The longest header value taken, in bytes: room for a resource URL of 2,000 bytes and
    /// more, well over what the SDKs sign.
    public static let maximumHeaderBytes = 4096

    /// The parameters a token has; any other is refused.
    static let parameterNames: Set<String> = ["sr", "sig", "se", "skn"]

    /// Parses an `Authorization` header value. The parameters may come in any order, names in
    /// any case. A header longer than ``maximumHeaderBytes`` or with a parameter other than
    /// `sr`, `sig`, `se` and `skn` is refused: a token is no place for padding. Throws a `401`
    /// ``HeraldError`` that says what is wrong, never echoing the signature.
    public init(parsing header: String) throws(HeraldError) {
        guard header.utf8.count <= Self.maximumHeaderBytes else {
            throw .unauthorized("the shared access signature is longer than \(Self.maximumHeaderBytes) bytes")
        }
        let text = header.trimmingWhitespace()
        let scheme = "SharedAccessSignature"
        guard text.utf8.count > scheme.utf8.count,
            text.prefix(scheme.count).lowercased() == scheme.lowercased(),
            let separator = text.dropFirst(scheme.count).first, separator.isWhitespace
        else {
            throw .unauthorized(
                "the Authorization header is not a shared access signature; expected 'SharedAccessSignature sr=…&sig=…&se=…&skn=…'"
            )
        }
        let parameters = text.dropFirst(scheme.count).trimmingSpaces()

        var values: [String: Substring] = [:]
        for pair in parameters.split(separator: "&", omittingEmptySubsequences: true) {
            guard let equals = pair.firstIndex(of: "=") else {
                throw .unauthorized(
                    "the shared access signature has a parameter without '=': parameters are name=value pairs joined by '&'"
                )
            }
            let name = pair[..<equals].lowercased()
            guard Self.parameterNames.contains(name) else {
                throw .unauthorized(
                    "the shared access signature has a parameter '\(Self.safeName(name))'; a token has sr, sig, se and skn only")
            }
            guard values[name] == nil else {
                throw .unauthorized("the shared access signature gives '\(Self.safeName(name))' more than once")
            }
            values[name] = pair[pair.index(after: equals)...]
        }

        func required(_ name: String, _ meaning: String) throws(HeraldError) -> Substring {
            guard let value = values[name], !value.isEmpty else {
                throw .unauthorized("the shared access signature has no '\(name)' (\(meaning))")
            }
            return value
        }
        let rawResource = try required("sr", "the signed resource URL")
        let rawSignature = try required("sig", "the signature")
        let rawExpiry = try required("se", "the expiry, in seconds since 1970")
        let rawKeyName = try required("skn", "the access policy's name")

        guard let decodedResource = rawResource.percentDecoded() else {
            throw .unauthorized("the shared access signature's 'sr' is not properly percent-encoded")
        }
        guard let signature = rawSignature.percentDecoded(), let bytes = Self.base64Decoded(signature) else {
            throw .unauthorized("the shared access signature's 'sig' is not percent-encoded base64")
        }
        guard let signedExpiry = rawExpiry.percentDecoded(), !signedExpiry.isEmpty,
            signedExpiry.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
            let expiry = Int(signedExpiry)
        else {
            throw .unauthorized("the shared access signature's 'se' is not a whole number of seconds since 1970")
        }
        guard let keyName = rawKeyName.percentDecoded(), !keyName.isEmpty else {
            throw .unauthorized("the shared access signature's 'skn' is not a percent-encoded policy name")
        }

        self.resource = String(rawResource)
        self.signature = signature
        self.expiry = expiry
        self.keyName = keyName
        self.signedExpiry = signedExpiry
        self.signatureBytes = bytes
        self.signedParts = URLParts(decodedResource)
    }

    /// The SHA-256 of what identifies the token: `sr` as sent, the signature, `se` and `skn`,
    /// after `scope` (a hub's name, so that one hash keys a cache shared by hubs). Two headers
    /// that spell one token differently (parameter order, names' case) have the same
    /// fingerprint; a cache of verified tokens keyed by it holds 32 bytes a token.
    public func fingerprint(in scope: String = "") -> [UInt8] {
        var hash = SHA256()
        for var field in [scope, resource, signedExpiry, keyName] {
            field.withUTF8 { hash.update(bufferPointer: UnsafeRawBufferPointer($0)) }
            withUnsafeBytes(of: UInt8(0)) { hash.update(bufferPointer: $0) }
        }
        hash.update(data: signatureBytes)
        return Array(hash.finalize())
    }

    /// A header value that signs `resource` until `expiry`: `sr` is the resource encoded like
    /// JavaScript's `encodeURIComponent` and lowercased (as the SDKs send it), `sig` and
    /// `skn` are percent-encoded.
    public static func make(resource: String, keyName: String, key: String, expiry: Date) -> String {
        let sr = percentEncoded(resource).lowercased()
        let se = String(Int(expiry.timeIntervalSince1970.rounded(.down)))
        let sig = signature(resource: sr, expiry: se, key: key)
        return "SharedAccessSignature sr=\(sr)&sig=\(percentEncoded(sig))&se=\(se)&skn=\(percentEncoded(keyName))"
    }

    /// The base64 of HMAC-SHA256 keyed with the UTF-8 bytes of `key`, over `rawSR + "\n" + expiry`.
    public static func signature(resource rawSR: String, expiry: String, key: String) -> String {
        let mac = HMAC<SHA256>.authenticationCode(
            for: Data((rawSR + "\n" + expiry).utf8),
            using: SymmetricKey(data: Data(key.utf8))
        )
        return Data(mac).base64EncodedString()
    }

    /// Whether the signature was made with `key` (compared in constant time) and the token has
    /// not expired at `now`.
    public func isValid(key: String, now: Date) -> Bool {
        guard !key.isEmpty, now.timeIntervalSince1970 < Double(expiry) else { return false }
        return HMAC<SHA256>.isValidAuthenticationCode(
            signatureBytes,
            authenticating: Data((resource + "\n" + signedExpiry).utf8),
            using: SymmetricKey(data: Data(key.utf8))
        )
    }

    /// Whether the token grants access to `url` (a full request URL): the percent-decoded
    /// `sr` must name the same host and a path that is `url`'s path or one of its parent
    /// paths, ending on a `/` boundary (`https://h/hub` covers `https://h/hub/messages`, not
    /// `https://h/hub2`).
    ///
    /// The comparison ignores letter case, the scheme (`https`, `http`, `sb`), the query, a
    /// trailing `/` and percent-encoding differences in the path. A port is compared only when
    /// both sides name one, because one SDK drops the port from `sr`.
    public func covers(url: String) -> Bool {
        guard let signed = signedParts, let requested = URLParts(url) else { return false }
        guard signed.host == requested.host else { return false }
        if let signedPort = signed.port, let requestedPort = requested.port, signedPort != requestedPort {
            return false
        }
        if signed.path.isEmpty || signed.path == requested.path { return true }
        return requested.path.hasPrefix(signed.path + "/")
    }

    /// Names the resource, policy and expiry; never the signature.
    public var description: String {
        "SharedAccessSignature(sr: \(resource), skn: \(keyName), se: \(expiry))"
    }
}

// MARK: - Encoding helpers

extension SharedAccessSignature {
    /// The characters `encodeURIComponent` leaves alone.
    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "!"), UInt8(ascii: "~"),
            UInt8(ascii: "*"), UInt8(ascii: "'"), UInt8(ascii: "("), UInt8(ascii: ")"):
            true
        default: false
        }
    }

    /// `text` percent-encoded like `encodeURIComponent` (UTF-8, uppercase hex).
    static func percentEncoded(_ text: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            if isUnreserved(byte) {
                bytes.append(byte)
            } else {
                bytes.append(UInt8(ascii: "%"))
                bytes.append(hex[Int(byte >> 4)])
                bytes.append(hex[Int(byte & 0x0f)])
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Standard base64, padding optional.
    private static func base64Decoded(_ text: String) -> Data? {
        var padded = text
        let remainder = padded.utf8.count % 4
        if remainder == 1 { return nil }
        if remainder > 0 { padded += String(repeating: "=", count: 4 - remainder) }
        guard let data = Data(base64Encoded: padded), !data.isEmpty else { return nil }
        return data
    }

    /// A parameter name as an error message may show it: printable ASCII, at most 20 characters.
    private static func safeName(_ name: String) -> String {
        String(
            name.unicodeScalars.filter { $0.isASCII && $0.value >= 0x21 && $0.value < 0x7f }.prefix(20).map(
                Character.init))
    }
}

/// The host, port and path of a URL, normalized for ``SharedAccessSignature/covers(url:)``:
/// host lowercased, path percent-decoded, lowercased and without a trailing `/`.
private struct URLParts: Hashable {
    var host: String
    var port: String?
    var path: String

    /// Reads the parts from the URL's bytes: the delimiters are ASCII, and only the host and
    /// the path are lowercased.
    init?(_ url: String) {
        let text = url.trimmingSpaces()
        let bytes = text.utf8
        var start = bytes.startIndex
        if let colon = bytes.indices.first(where: { bytes[$0] == UInt8(ascii: ":") && bytes[$0...].starts(with: "://".utf8) }) {
            start = bytes.index(colon, offsetBy: 3)
        }
        let rest = bytes[start...]
        let authorityEnd = rest.firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? rest.endIndex
        var authority = bytes[start..<authorityEnd]
        if let at = authority.lastIndex(of: UInt8(ascii: "@")) { authority = authority[authority.index(after: at)...] }
        let pathAndMore = bytes[authorityEnd...]
        let pathEnd = pathAndMore.firstIndex { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? pathAndMore.endIndex
        let rawPath = Substring(bytes[authorityEnd..<pathEnd])

        // `[::1]:8443`, `host:8443`, `host`.
        let hostBytes: Substring.UTF8View
        if authority.first == UInt8(ascii: "["), let close = authority.firstIndex(of: UInt8(ascii: "]")) {
            hostBytes = authority[...close]
            let after = authority[authority.index(after: close)...]
            port = after.first == UInt8(ascii: ":") ? String(Substring(after.dropFirst())) : nil
        } else if let colon = authority.lastIndex(of: UInt8(ascii: ":")) {
            hostBytes = authority[..<colon]
            port = String(Substring(authority[authority.index(after: colon)...]))
        } else {
            hostBytes = authority
            port = nil
        }
        if port?.isEmpty == true { port = nil }
        host = Substring(hostBytes).lowercased()
        guard !host.isEmpty else { return nil }

        var path = (rawPath.percentDecoded() ?? String(rawPath)).lowercased()
        while path.hasSuffix("/") { path.removeLast() }
        self.path = path
    }
}
