import Foundation
import HTTPTypes
import HeraldCore
import Hummingbird
import Testing

@testable import HeraldServer

/// The digest that makes a repeat under an Idempotency-Key the same send. A key's digest is
/// stored for up to 30 days, so a retry that spans an upgrade is compared with a digest an
/// earlier release computed: the bytes hashed never change.
@Suite struct IdempotencyDigestTests {
    static func request(path: String, headers: [(String, String)]) -> Request {
        var head = HTTPRequest(method: .post, scheme: "http", authority: "localhost", path: path)
        for (name, value) in headers { head.headerFields.append(HTTPField(name: HTTPField.Name(name)!, value: value)) }
        return Request(head: head, body: .init(buffer: ByteBuffer()))
    }

    static let body = Data(#"{"aps":{"alert":"hi"}}"#.utf8)

    /// SHA-256 over the method, the path, the sorted query, the sorted headers that change a
    /// send and the body, each after its length as 8 bytes big-endian; the value computed apart
    /// from Herald, with Python's hashlib.
    @Test func theDigestIsTheOneEveryReleaseComputes() throws {
        let request = Self.request(
            path: "/hub/messages?x=1&api-version=2015-01",
            headers: [
                ("Content-Type", " Application/JSON ; charset=utf-8"), ("ServiceBusNotification-Format", "apple"),
                ("apns-priority", "10"), ("Authorization", "SharedAccessSignature sr=a&sig=b"), ("Idempotency-Key", "key-1"),
                ("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"),
            ])
        let key = try #require(try request.idempotencyKey(scope: "hub", body: Self.body, retention: .seconds(60)))
        #expect(key.key == "key-1")
        #expect(key.digest == "5f8189e03441de3b79b71d29347dd148aa17a582d2d1f0b8c213d01e22e4cb9f")
    }

    /// What a retry may renew (its signature, its trace, a charset) leaves the digest as it was;
    /// what changes the send changes it.
    @Test func onlyWhatChangesTheSendChangesTheDigest() throws {
        func digest(_ path: String, _ headers: [(String, String)], body: Data = Self.body) throws -> String {
            let all = headers + [("Idempotency-Key", "k")]
            return try #require(try Self.request(path: path, headers: all).idempotencyKey(scope: "hub", body: body, retention: .seconds(60))).digest
        }
        let first = try digest("/hub/messages?api-version=2015-01", [("Content-Type", "application/json"), ("Authorization", "one")])
        #expect(try digest("/hub/messages?api-version=2015-01", [("content-type", "application/json;charset=utf-8"), ("Authorization", "two")]) == first)
        #expect(try digest("/hub/messages?api-version=2015-01", [("Content-Type", "text/plain")]) != first)
        #expect(try digest("/hub/messages?api-version=2015-01", [("Content-Type", "application/json"), ("apns-priority", "5")]) != first)
        #expect(try digest("/hub/messages?api-version=2015-01&direct", [("Content-Type", "application/json")]) != first)
        #expect(try digest("/hub/messages?api-version=2015-01", [("Content-Type", "application/json")], body: Data("{}".utf8)) != first)
        // Beyond ASCII, the media type is still what comes before the first ';', trimmed.
        #expect(try digest("/hub/messages?api-version=2015-01", [("Content-Type", "\u{00A0}application/json\u{00A0}; charset=utf-8")]) == first)
    }
}
