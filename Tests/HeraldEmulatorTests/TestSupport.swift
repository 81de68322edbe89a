import AsyncHTTPClient
import Crypto
import Foundation
import HeraldEmulator
import HeraldTLS
import Logging
import NIOCore
import NIOHTTP1
import NIOSSL
import Synchronization
import Testing
import _CryptoExtras

/// A clock that tests move by hand.
final class TestClock: Sendable {
    private let current: Mutex<Date>

    init(_ start: Date = Date(timeIntervalSince1970: 1_750_000_000)) {
        current = Mutex(start)
    }

    var now: Date { current.withLock { $0 } }

    func advance(by seconds: TimeInterval) {
        current.withLock { $0 = $0.addingTimeInterval(seconds) }
    }

    var nowFunction: @Sendable () -> Date { { self.now } }
}

enum TestSupport {
    static let logger = Logger(label: "herald.emulator.tests")

    /// One CA for the whole test run (creating one is cheap, but there is no need).
    static let authority: CertificateAuthority = try! CertificateAuthority.makeEphemeral()

    static func identity() throws -> TLSIdentity {
        try authority.issueServerIdentity(hosts: ["127.0.0.1", "localhost"])
    }

    /// An RSA key for FCM tests, generated once (slow in debug builds).
    static let rsaKey: _RSA.Signing.PrivateKey = try! _RSA.Signing.PrivateKey(keySize: .bits2048)
    static let otherRSAKey: _RSA.Signing.PrivateKey = try! _RSA.Signing.PrivateKey(keySize: .bits2048)

    /// Runs `body` with an HTTP client that trusts the test CA.
    static func withClient<T>(
        httpVersion: HTTPClient.Configuration.HTTPVersion = .automatic,
        _ body: (HTTPClient) async throws -> T
    ) async throws -> T {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates([try authority.sslCertificate])
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
        configuration.httpVersion = httpVersion
        // Not under test: a busy machine may take longer than the default to set up TLS.
        configuration.timeout.connect = .seconds(60)
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        do {
            let result = try await body(client)
            try await client.shutdown()
            return result
        } catch {
            try? await client.shutdown()
            throw error
        }
    }

    static func base64URL(_ data: some DataProtocol) -> String {
        Data(data).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func base64URLJSON(_ object: [String: Any]) throws -> String {
        base64URL(try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]))
    }

    /// A compact JWT with arbitrary header and claims, ES256-signed with `key`.
    static func es256JWT(header: [String: Any], claims: [String: Any], key: P256.Signing.PrivateKey) throws -> String {
        let input = try base64URLJSON(header) + "." + base64URLJSON(claims)
        let signature = try key.signature(for: Data(input.utf8))
        return input + "." + base64URL(signature.rawRepresentation)
    }

    /// A compact JWT with arbitrary header and claims, RS256-signed with `key`.
    static func rs256JWT(header: [String: Any], claims: [String: Any], key: _RSA.Signing.PrivateKey) throws -> String {
        let input = try base64URLJSON(header) + "." + base64URLJSON(claims)
        let signature = try key.signature(for: Data(input.utf8), padding: .insecurePKCS1v1_5)
        return input + "." + base64URL(signature.rawRepresentation)
    }
}

/// A response read whole.
struct TestResponse {
    var status: Int
    var headers: HTTPHeaders
    var version: HTTPVersion
    var body: ByteBuffer

    var bodyString: String { String(buffer: body) }

    func json() throws -> [String: Any] {
        let object = try JSONSerialization.jsonObject(with: Data(body.readableBytesView))
        return try #require(object as? [String: Any])
    }

    func decode<T: Decodable>(_ type: T.Type, dates: JSONDecoder.DateDecodingStrategy = .millisecondsSince1970) throws -> T {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = dates
        return try decoder.decode(T.self, from: Data(body.readableBytesView))
    }
}

extension HTTPClient {
    func send(
        _ method: HTTPMethod,
        _ url: String,
        headers: [(String, String)] = [],
        body: String? = nil,
        timeout: TimeAmount = .seconds(30)
    ) async throws -> TestResponse {
        try await send(method, url, headers: headers, bodyBytes: body.map { Array($0.utf8) }, timeout: timeout)
    }

    func send(
        _ method: HTTPMethod,
        _ url: String,
        headers: [(String, String)] = [],
        bodyBytes: [UInt8]?,
        timeout: TimeAmount = .seconds(30)
    ) async throws -> TestResponse {
        var request = HTTPClientRequest(url: url)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let bodyBytes { request.body = .bytes(ByteBuffer(bytes: bodyBytes)) }
        let response = try await execute(request, timeout: timeout)
        let body = try await response.body.collect(upTo: 1 << 20)
        return TestResponse(status: Int(response.status.code), headers: response.headers, version: response.version, body: body)
    }
}
