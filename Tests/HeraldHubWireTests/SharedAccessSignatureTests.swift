import Crypto
import Foundation
import HeraldCore
import HeraldHubWire
import Testing

/// Tokens built the way each hub SDK builds them (re-implemented here from their documented
/// behaviour, independently of `SharedAccessSignature.make`), checked by the parser.
@Suite("Shared access signatures")
struct SharedAccessSignatureTests {
    static let key = "sQ5kD1vXQp2+TmNfJ3bq8WzY0hLr6aVeUcKx4oGiM7E="
    static let keyName = "DefaultFullSharedAccessSignature"
    static let expiry = 1_893_456_000  // 2030-01-01T00:00:00Z
    static let beforeExpiry = Date(timeIntervalSince1970: TimeInterval(expiry - 60))

    // MARK: Known answer

    @Test func signatureMatchesAKnownAnswer() {
        // Computed once with Python: base64(hmac.new(key.encode(), (sr + "\n" + se).encode(), sha256).digest()).
        let signature = SharedAccessSignature.signature(
            resource: "http%3a%2f%2flocalhost%2fmyhub%2fmessages%2f",
            expiry: "1893456000",
            key: Self.key
        )
        #expect(signature == "UM4CMn0t+AnTyhW55kTA4ItwMxzM/27ZpOM/e1R6WgI=")
        #expect(
            SharedAccessSignature.signature(
                resource: "https%3A%2F%2Flocalhost%3A8443%2F", expiry: "1893456000", key: Self.key)
                == "dDesIpFizZktKLRJjsdPtrzSJz6RbUu7Ockoq6dKFjQ="
        )
    }

    // MARK: Each SDK's token

    @Test func acceptsTheDotNetSDKToken() throws {
        // .NET: the request URI with scheme http, no port, no query and a trailing '/', lowercased,
        // then HttpUtility.UrlEncode (lowercase hex); the signature is encoded the same way.
        let request =
            "https://localhost:8443/MyHub/registrations/8017651207128774516-1325807942325923056-1?api-version=2017-04"
        let sr = Self.httpUtilityURLEncode(
            "http://localhost/myhub/registrations/8017651207128774516-1325807942325923056-1/")
        #expect(sr == "http%3a%2f%2flocalhost%2fmyhub%2fregistrations%2f8017651207128774516-1325807942325923056-1%2f")
        let sig = Self.hmac(sr, "\(Self.expiry)")
        let header =
            "SharedAccessSignature sr=\(sr)&sig=\(Self.httpUtilityURLEncode(sig))&se=\(Self.expiry)&skn=\(Self.keyName)"

        let token = try SharedAccessSignature(parsing: header)
        #expect(token.resource == sr)
        #expect(token.signature == sig)
        #expect(token.expiry == Self.expiry)
        #expect(token.keyName == Self.keyName)
        #expect(token.isValid(key: Self.key, now: Self.beforeExpiry))
        #expect(token.covers(url: request))
        #expect(!token.covers(url: "https://localhost:8443/MyHub/registrations/other"))
    }

    @Test func acceptsTheJavaScriptSDKToken() throws {
        // JS: the namespace base URL, encodeURIComponent of it lowercased (uppercase hex);
        // parameters sr, sig, se, skn, each encoded.
        let sr = Self.encodeURIComponent("https://localhost:8443/")
        let sig = Self.hmac(sr, "\(Self.expiry)")
        let header =
            "SharedAccessSignature sr=\(sr)&sig=\(Self.encodeURIComponent(sig))&se=\(Self.expiry)&skn=\(Self.encodeURIComponent("Listen Key"))"

        let token = try SharedAccessSignature(parsing: header)
        #expect(token.keyName == "Listen Key")
        #expect(token.isValid(key: Self.key, now: Self.beforeExpiry))
        #expect(token.covers(url: "https://localhost:8443/myhub/messages?api-version=2020-06"))
        #expect(token.covers(url: "https://localhost:8443/otherhub/installations/x"))
        #expect(!token.covers(url: "https://elsewhere:8443/myhub/messages"))
    }

    @Test func acceptsThePythonRESTSampleToken() throws {
        // Python sample: quote(url, '').lower() of https://ns/hub; parameters sig, se, skn, sr;
        // the signature quoted with '/' left as is.
        let sr = Self.pythonQuote("https://localhost:8443/MyHub", safe: "").lowercased()
        #expect(sr == "https%3a%2f%2flocalhost%3a8443%2fmyhub")
        let sig = Self.hmac(sr, "\(Self.expiry)")
        let header =
            "SharedAccessSignature sig=\(Self.pythonQuote(sig, safe: "/"))&se=\(Self.expiry)&skn=\(Self.keyName)&sr=\(sr)"

        let token = try SharedAccessSignature(parsing: header)
        #expect(token.resource == sr)
        #expect(token.isValid(key: Self.key, now: Self.beforeExpiry))
        #expect(token.covers(url: "https://localhost:8443/MyHub/messages?api-version=2015-01"))
        #expect(token.covers(url: "https://localhost:8443/myhub"))
        #expect(!token.covers(url: "https://localhost:8443/myhub2/messages"))
    }

    @Test func acceptsTheIOSSDKToken() throws {
        // iOS: the full request URL with its query, lowercased, https → http, percent-encoded
        // (uppercase hex), then lowercased again; the signature percent-encoded in uppercase hex.
        let request = "https://localhost:8443/MyHub/installations/Device-1?api-version=2020-06"
        let sr = Self.iOSURLEncode(request.lowercased().replacingOccurrences(of: "https://", with: "http://"))
            .lowercased()
        #expect(sr == "http%3a%2f%2flocalhost%3a8443%2fmyhub%2finstallations%2fdevice-1%3fapi-version%3d2020-06")
        let sig = Self.hmac(sr, "\(Self.expiry)")
        let header =
            "SharedAccessSignature sr=\(sr)&sig=\(Self.iOSURLEncode(sig))&se=\(Self.expiry)&skn=\(Self.keyName)"

        let token = try SharedAccessSignature(parsing: header)
        #expect(token.isValid(key: Self.key, now: Self.beforeExpiry))
        #expect(token.covers(url: request))
        #expect(!token.covers(url: "https://localhost:8443/MyHub/installations/Device-2?api-version=2020-06"))
    }

    // MARK: Validity

    @Test func madeTokensAreValidUntilTheyExpire() throws {
        let expiry = Date(timeIntervalSince1970: TimeInterval(Self.expiry))
        let header = SharedAccessSignature.make(
            resource: "https://localhost:8443/MyHub",
            keyName: Self.keyName,
            key: Self.key,
            expiry: expiry
        )
        #expect(header.hasPrefix("SharedAccessSignature sr=https%3a%2f%2flocalhost%3a8443%2fmyhub&sig="))
        #expect(header.hasSuffix("&se=1893456000&skn=\(Self.keyName)"))

        let token = try SharedAccessSignature(parsing: header)
        #expect(token.resource == "https%3a%2f%2flocalhost%3a8443%2fmyhub")
        #expect(token.expiry == Self.expiry)
        #expect(token.isValid(key: Self.key, now: Self.beforeExpiry))
        #expect(!token.isValid(key: Self.key, now: expiry))
        #expect(!token.isValid(key: Self.key, now: expiry.addingTimeInterval(1)))
        #expect(!token.isValid(key: Self.key + "x", now: Self.beforeExpiry))
        #expect(!token.isValid(key: "", now: Self.beforeExpiry))
        #expect(token.covers(url: "https://localhost:8443/MyHub/messages"))
    }

    @Test func theSignatureCoversTheResourceAndExpiryAsSent() throws {
        let header = SharedAccessSignature.make(
            resource: "https://localhost:8443/hub",
            keyName: "n",
            key: Self.key,
            expiry: Date(timeIntervalSince1970: TimeInterval(Self.expiry))
        )
        // Another resource, or another expiry, with the same signature.
        let otherResource = header.replacingOccurrences(of: "%2fhub", with: "%2fbuh")
        #expect(try !SharedAccessSignature(parsing: otherResource).isValid(key: Self.key, now: Self.beforeExpiry))
        let laterExpiry = header.replacingOccurrences(of: "se=1893456000", with: "se=1893456001")
        #expect(try !SharedAccessSignature(parsing: laterExpiry).isValid(key: Self.key, now: Self.beforeExpiry))
        // The same resource encoded differently is a different signed string.
        let upper = header.replacingOccurrences(of: "%3a%2f%2f", with: "%3A%2F%2F")
        #expect(try !SharedAccessSignature(parsing: upper).isValid(key: Self.key, now: Self.beforeExpiry))
    }

    @Test func parsingIsLenientAboutCaseAndSpacesButNotUnknownParameters() throws {
        let sr = "http%3a%2f%2fh%2fhub"
        let sig = Self.hmac(sr, "\(Self.expiry)")
        let header =
            "  sharedaccesssignature   SKN=n&SE=\(Self.expiry)&&Sig=\(Self.encodeURIComponent(sig))&SR=\(sr)  "
        let token = try SharedAccessSignature(parsing: header)
        #expect(token.keyName == "n")
        #expect(token.isValid(key: Self.key, now: Self.beforeExpiry))

        // A token is no place for padding: another parameter, or a header past the limit.
        let padded = header.trimmingCharacters(in: .whitespaces) + "&extra=1"
        let unknown = #expect(throws: HeraldError.self) { try SharedAccessSignature(parsing: padded) }
        #expect(unknown?.code == .unauthorized && unknown?.message.contains("'extra'") == true)
        let long = "SharedAccessSignature sr=" + String(repeating: "a", count: SharedAccessSignature.maximumHeaderBytes) + "&sig=x&se=1&skn=n"
        #expect(throws: HeraldError.self) { try SharedAccessSignature(parsing: long) }

        // One token however it is spelled: one fingerprint.
        let reordered = try SharedAccessSignature(parsing: "SharedAccessSignature sr=\(sr)&sig=\(Self.encodeURIComponent(sig))&se=\(Self.expiry)&skn=n")
        #expect(reordered.fingerprint() == token.fingerprint())
        let other = try SharedAccessSignature(parsing: "SharedAccessSignature sr=\(sr)&sig=\(Self.encodeURIComponent(sig))&se=\(Self.expiry)&skn=m")
        #expect(other.fingerprint() != token.fingerprint())
        #expect(token.fingerprint(in: "hub-a") != token.fingerprint(in: "hub-b"))
    }

    @Test func descriptionNeverShowsTheSignature() throws {
        let header = SharedAccessSignature.make(resource: "https://h/hub", keyName: "n", key: Self.key, expiry: Date())
        let token = try SharedAccessSignature(parsing: header)
        #expect(!token.description.contains(token.signature))
        #expect(!String(describing: token).contains(token.signature))
        #expect(token.description.contains("skn: n"))
    }

    static let malformed: [(header: String, message: String)] = [
        ("", "not a shared access signature"),
        ("Bearer abc", "not a shared access signature"),
        ("SharedAccessSignature", "not a shared access signature"),
        ("SharedAccessSignaturesr=a&sig=YQ==&se=1&skn=n", "not a shared access signature"),
        ("SharedAccessSignature sig=YQ==&se=1&skn=n", "has no 'sr'"),
        ("SharedAccessSignature sr=a&se=1&skn=n", "has no 'sig'"),
        ("SharedAccessSignature sr=a&sig=YQ==&skn=n", "has no 'se'"),
        ("SharedAccessSignature sr=a&sig=YQ==&se=1", "has no 'skn'"),
        ("SharedAccessSignature sr=&sig=YQ==&se=1&skn=n", "has no 'sr'"),
        ("SharedAccessSignature sr=a&sig=YQ==&se=1&skn=n&sr=b", "gives 'sr' more than once"),
        ("SharedAccessSignature sr=a&sig=YQ==&se=1&skn=n&junk", "parameter without '='"),
        ("SharedAccessSignature sr=a%2&sig=YQ==&se=1&skn=n", "'sr' is not properly percent-encoded"),
        ("SharedAccessSignature sr=a&sig=%%%&se=1&skn=n", "'sig' is not percent-encoded base64"),
        ("SharedAccessSignature sr=a&sig=not*base64&se=1&skn=n", "'sig' is not percent-encoded base64"),
        ("SharedAccessSignature sr=a&sig=YQ==&se=soon&skn=n", "'se' is not a whole number"),
        ("SharedAccessSignature sr=a&sig=YQ==&se=-5&skn=n", "'se' is not a whole number"),
        ("SharedAccessSignature sr=a&sig=YQ==&se=1&skn=%", "'skn' is not a percent-encoded policy name"),
    ]

    @Test(arguments: malformed)
    func refusesMalformedHeaders(_ example: (header: String, message: String)) {
        #expect {
            try SharedAccessSignature(parsing: example.header)
        } throws: { error in
            guard let error = error as? HeraldError else { return false }
            return error.code == .unauthorized && error.message.contains(example.message)
        }
    }

    // MARK: Coverage

    static let coverage: [(sr: String, url: String, covered: Bool)] = [
        ("https://h/hub", "https://h/hub/messages", true),
        ("https://h/hub", "https://h/hub", true),
        ("https://h/hub", "https://h/hub/", true),
        ("https://h/hub", "https://h/hub2", false),
        ("https://h/hub", "https://h/hub2/messages", false),
        ("https://h/hub", "https://h/hu", false),
        ("https://h/hub", "https://h/", false),
        ("https://h/hub/", "https://h/hub/registrations/1", true),
        ("https://h/", "https://h/any/thing", true),
        ("https://h", "https://h/any/thing", true),
        ("http://h/hub", "https://h/hub/messages", true),
        ("sb://h/hub", "https://h/hub/messages", true),
        ("https://H/HUB", "https://h/hub/Messages", true),
        ("https://h/hub?api-version=2020-06", "https://h/hub/messages?api-version=2015-01", true),
        ("https://h/hub/messages?x=1", "https://h/hub?x=1/messages", false),
        ("https://h:8443/hub", "https://h:8443/hub/messages", true),
        ("https://h:8443/hub", "https://h:9443/hub/messages", false),
        ("http://h/hub/", "https://h:8443/hub/messages", true),
        ("https://h:8443/hub", "https://h/hub/messages", true),
        ("https://other/hub", "https://h/hub/messages", false),
        ("https://h.example/hub", "https://h/hub/messages", false),
        ("https://h/hub/installations/a%23b", "https://h/hub/installations/a%23b", true),
        ("https://[::1]:8443/hub", "https://[::1]:8443/hub/messages", true),
        ("https://[::1]:8443/hub", "https://[::2]:8443/hub/messages", false),
    ]

    @Test(arguments: coverage)
    func coversPrefixesOnSegmentBoundaries(_ example: (sr: String, url: String, covered: Bool)) throws {
        let header = "SharedAccessSignature sr=\(Self.encodeURIComponent(example.sr))&sig=YQ%3D%3D&se=1&skn=n"
        let token = try SharedAccessSignature(parsing: header)
        #expect(token.covers(url: example.url) == example.covered)
    }

    @Test func coversTheDotNetDoubleEncodedPath() throws {
        // .NET encodes an already percent-encoded URI again: '#' in an id travels as %2523.
        let sr = Self.httpUtilityURLEncode("http://h/hub/installations/a%23b/")
        let token = try SharedAccessSignature(parsing: "SharedAccessSignature sr=\(sr)&sig=YQ%3d%3d&se=1&skn=n")
        #expect(token.covers(url: "https://h:8443/hub/installations/a%23b?api-version=2020-06"))
        #expect(!token.covers(url: "https://h:8443/hub/installations/a"))
    }

    // MARK: - The SDKs' encoders, re-implemented for the tests

    static func hmac(_ sr: String, _ se: String) -> String {
        let mac = HMAC<SHA256>.authenticationCode(
            for: Data((sr + "\n" + se).utf8), using: SymmetricKey(data: Data(key.utf8)))
        return Data(mac).base64EncodedString()
    }

    private static func encode(_ text: String, keeping keep: (UInt8) -> Bool, hex: String) -> String {
        var result = ""
        let digits = Array(hex)
        for byte in text.utf8 {
            if keep(byte) {
                result.append(Character(Unicode.Scalar(byte)))
            } else {
                result += "%" + String(digits[Int(byte >> 4)]) + String(digits[Int(byte & 0xf)])
            }
        }
        return result
    }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x5a).contains(byte) || (0x61...0x7a).contains(byte)
    }

    /// .NET `HttpUtility.UrlEncode`: lowercase hex, space as '+', keeps `-_.!*()`.
    static func httpUtilityURLEncode(_ text: String) -> String {
        encode(text, keeping: { isAlphanumeric($0) || "-_.!*()".utf8.contains($0) }, hex: "0123456789abcdef")
            .replacingOccurrences(of: "%20", with: "+")
    }

    /// JavaScript `encodeURIComponent`: uppercase hex, keeps `-_.!~*'()`.
    static func encodeURIComponent(_ text: String) -> String {
        encode(text, keeping: { isAlphanumeric($0) || "-_.!~*'()".utf8.contains($0) }, hex: "0123456789ABCDEF")
    }

    /// Python `urllib.parse.quote(text, safe)`: uppercase hex, keeps `_.-~` and `safe`.
    static func pythonQuote(_ text: String, safe: String) -> String {
        encode(
            text, keeping: { isAlphanumeric($0) || "_.-~".utf8.contains($0) || safe.utf8.contains($0) },
            hex: "0123456789ABCDEF")
    }

    /// The iOS SDK's `urlEncode:`: uppercase hex, keeps `.-_~`.
    static func iOSURLEncode(_ text: String) -> String {
        encode(text, keeping: { isAlphanumeric($0) || ".-_~".utf8.contains($0) }, hex: "0123456789ABCDEF")
    }
}
