import Foundation
import Synchronization
import Testing

@testable import HeraldPush

/// A wall clock that tests move by hand.
final class TestClock: Sendable {
    private let current: Mutex<Date>

    init(_ start: Date = Date(timeIntervalSince1970: 1_750_000_000)) {
        current = Mutex(start)
    }

    var now: Date { current.withLock { $0 } }

    func advance(minutes: Double) {
        current.withLock { $0.addTimeInterval(minutes * 60) }
    }

    /// A closure to inject as `now`.
    var function: @Sendable () -> Date { { self.now } }
}

/// The three parts of a compact JWT, decoded.
struct DecodedJWT {
    var header: [String: Any]
    var claims: [String: Any]
    /// The claims as JSON text, to check how numbers are written.
    var claimsText: String
    var signingInput: Data
    var signature: Data

    init(_ jwt: some StringProtocol) throws {
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
        try #require(parts.count == 3)
        for part in parts {
            // base64url without padding: no '+', '/', '='
            #expect(!part.contains("=") && !part.contains("+") && !part.contains("/"))
        }
        let header = try #require(JSONWebToken.base64URLDecode(parts[0]))
        let claims = try #require(JSONWebToken.base64URLDecode(parts[1]))
        self.header = try #require(try JSONSerialization.jsonObject(with: header) as? [String: Any])
        self.claims = try #require(try JSONSerialization.jsonObject(with: claims) as? [String: Any])
        self.claimsText = String(decoding: claims, as: UTF8.self)
        self.signingInput = Data((parts[0] + "." + parts[1]).utf8)
        self.signature = try #require(JSONWebToken.base64URLDecode(parts[2]))
    }
}
