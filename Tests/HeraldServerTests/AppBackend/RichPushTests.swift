import AsyncHTTPClient
import Foundation
import HeraldCore
import HeraldEmulator
import HeraldSQLite
import HeraldServer
import HeraldStore
import HeraldTestSupport
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import NIOHTTP1
import Testing

@Suite struct RichPushTests {
    /// A small "PNG": its signature and some bytes of every value.
    static let image: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + (0..<3000).map { UInt8(truncatingIfNeeded: $0 &* 7) }

    static func upload(
        _ client: some TestClientProtocol,
        _ headers: HTTPFields,
        bytes: [UInt8] = image,
        type: String = "image/png"
    ) async throws -> RichUpload {
        var fields = headers
        fields[.contentType] = type
        return try await client.execute(uri: "/api/rich", method: .post, headers: fields, body: ByteBuffer(bytes: bytes)) { response in
            guard response.status == .created else { throw TestFailure("upload: \(response.status) \(response.body.string)") }
            return try JSONDecoder().decode(RichUpload.self, from: response.body)
        }
    }

    /// The ids of the rich content whose bytes the store holds.
    static func stored(in herald: TestHerald) async throws -> [String] {
        try await herald.store.stringsForTesting("SELECT content_id FROM rich_content_bytes ORDER BY content_id")
    }

    @Test func anUploadIsStoredWithItsBytes() async throws {
        try await TestHerald.withHerald { herald in
            try await herald.application().test(.router) { client in
                let alice = try await client.signUp("alice")
                let upload = try await Self.upload(client, alice, type: "Image/PNG; foo=bar")
                #expect(upload.type == "image/png")
                #expect(upload.size == Self.image.count)
                #expect(Int32(upload.id).map { (2...Int32.max).contains($0) && $0 % 2 == 0 && String($0) == upload.id } == true)
                #expect(try await Self.stored(in: herald) == [upload.id])
                #expect(try await herald.store.richContentBytes(id: upload.id) == Data(Self.image))
                let row = try #require(try await herald.store.richContent(id: upload.id, now: herald.clock.now))
                #expect(row.owner == "alice" && row.mediaType == "image/png" && row.size == Self.image.count)
            }
        }
    }

    @Test(arguments: ["text/html", "application/octet-stream", "image/svg+xml", ""])
    func aTypeNotAllowedIs415AndStoresNothing(type: String) async throws {
        try await TestHerald.withHerald { herald in
            try await herald.application().test(.router) { client in
                var headers = try await client.signUp("alice")
                if !type.isEmpty { headers[.contentType] = type }
                try await client.execute(uri: "/api/rich", method: .post, headers: headers, body: ByteBuffer(string: "<script>")) { response in
                    #expect(response.status == .unsupportedMediaType)
                    #expect(response.body.string.contains(type.isEmpty ? "Content-Type" : "image/png"))
                }
                #expect(try await Self.stored(in: herald).isEmpty)
                #expect(try await herald.store.integerForTesting("SELECT count(*) FROM rich_content") == 0)
            }
        }
    }

    /// The declared length is over the limit: refused before reading the body.
    @Test func tooLargeByContentLengthIs413() async throws {
        try await TestHerald.withHerald(configure: { $0.richMaxBytes = 1000 }) { herald in
            try await herald.application().test(.router) { client in
                var headers = try await client.signUp("alice")
                headers[.contentType] = "image/png"
                try await client.execute(uri: "/api/rich", method: .post, headers: headers, body: ByteBuffer(bytes: Self.image)) { response in
                    #expect(response.status == .contentTooLarge)
                    #expect(response.body.string.contains("1000"))
                }
                #expect(try await Self.stored(in: herald).isEmpty)
                // Exactly the limit is fine.
                _ = try await Self.upload(client, headers, bytes: Array(Self.image.prefix(1000)))
            }
        }
    }

    /// No declared length (chunked): counted while streaming, over a real socket; nothing is
    /// stored.
    @Test func tooLargeWhileStreamingIs413AndStoresNothing() async throws {
        try await TestHerald.withHerald(configure: { $0.richMaxBytes = 1000 }) { herald in
            try await herald.application().test(.live) { client in
                let alice = try await client.signUp("alice")
                let port = try #require(client.port)
                let chunks = [[UInt8]](repeating: [UInt8](repeating: 0x41, count: 600), count: 3)
                var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/api/rich")
                request.method = .POST
                request.headers.add(name: "Authorization", value: alice[.authorization]!)
                request.headers.add(name: "Content-Type", value: "text/plain")
                request.body = .stream(chunks.map { ByteBuffer(bytes: $0) }.async, length: .unknown)
                let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
                #expect(response.status.code == 413)
                #expect(try await Self.stored(in: herald).isEmpty)

                // Under the limit, streamed: accepted.
                var small = HTTPClientRequest(url: "http://127.0.0.1:\(port)/api/rich")
                small.method = .POST
                small.headers.add(name: "Authorization", value: alice[.authorization]!)
                small.headers.add(name: "Content-Type", value: "text/plain")
                small.body = .stream(chunks.prefix(1).map { ByteBuffer(bytes: $0) }.async, length: .unknown)
                let accepted = try await HTTPClient.shared.execute(small, timeout: .seconds(30))
                #expect(accepted.status.code == 201)
                #expect(try await Self.stored(in: herald).count == 1)
            }
        }
    }

    /// alice uploads and sends to bob: bob's device gets the id, type and message; bob (and
    /// alice) fetch the bytes; nobody else does.
    @Test func theRecipientFetchesTheBytesAndNobodyElse() async throws {
        try await TestHerald.withHerald { herald in
            try await herald.application().test(.router) { client in
                let alice = try await client.signUp("alice")
                let bob = try await client.signUp("bob")
                let carol = try await client.signUp("carol")
                let bobPhone = herald.fcm.registerDevice()
                _ = try await client.register(bob, handle: bobPhone, platform: "fcm")
                let upload = try await Self.upload(client, alice)

                // Before it is sent, bob may not read it.
                try await client.execute(uri: "/api/notifications/\(upload.id)", method: .get, headers: bob) { response in
                    #expect(response.status == .notFound)
                }
                try await client.execute(
                    uri: "/api/notifications/rich?to_tag=bob", method: .post, headers: alice,
                    body: .json(#"{"richId":"\#(upload.id)","message":"Look at this"}"#)
                ) { response in
                    #expect(response.status == .ok)
                    let answer = try JSONDecoder().decode(JSONValue.self, from: response.body)
                    #expect(answer["richId"] == .string(upload.id))
                    #expect(answer["success"] == .number(1))
                }
                let received = try #require(herald.fcm.notifications(for: bobPhone).first)
                let message = try JSONDecoder().decode(JSONValue.self, from: Data(received.payload.utf8))
                #expect(
                    ReceiptIDs.removed(from: message["data"])
                        == .object([
                            ("richContentType", .string("image/png")), ("richId", .string(upload.id)), ("richMessage", .string("Look at this")),
                            ("richType", .string("img")),
                        ]))
                #expect(message["notification"] == nil)

                for reader in [bob, alice] {
                    try await client.execute(uri: "/api/notifications/\(upload.id)", method: .get, headers: reader) { response in
                        #expect(response.status == .ok)
                        #expect(response.headers[.contentType] == "image/png")
                        #expect(response.headers[.contentLength] == "\(Self.image.count)")
                        #expect(response.headers[.xContentTypeOptions] == "nosniff")
                        #expect(Array(response.body.readableBytesView) == Self.image)
                    }
                }
                var bodies: Set<String> = []
                for (headers, id) in [(carol, upload.id), (carol, "AAAAAAAAAAAAAAAAAAAAAA"), (bob, "%2E%2E%2Fherald.sqlite")] {
                    try await client.execute(uri: "/api/notifications/\(id)", method: .get, headers: headers) { response in
                        #expect(response.status == .notFound, "\(id)")
                        bodies.insert(response.body.string)
                    }
                }
                #expect(bodies.count == 1)
                try await client.execute(uri: "/api/notifications/../herald.sqlite", method: .get, headers: bob) { response in
                    #expect(response.status == .notFound)
                    #expect(!response.body.string.contains("SQLite"))
                }
                try await client.execute(uri: "/api/notifications/\(upload.id)", method: .get) { response in
                    #expect(response.status == .unauthorized)
                }
            }
        }
    }

    /// Only the uploader may send content: to anyone else it does not exist.
    @Test func someoneElsesContentCannotBeSent() async throws {
        try await TestHerald.withHerald { herald in
            try await herald.application().test(.router) { client in
                let alice = try await client.signUp("alice")
                let mallory = try await client.signUp("mallory")
                let token = herald.apns.registerDevice(topic: TestHerald.topic)
                _ = try await client.register(mallory, handle: token)
                let upload = try await Self.upload(client, alice)
                for id in [upload.id, "AAAAAAAAAAAAAAAAAAAAAA"] {
                    try await client.execute(
                        uri: "/api/notifications/rich?to_tag=mallory", method: .post, headers: mallory,
                        body: .json(#"{"richId":"\#(id)","message":"mine now"}"#)
                    ) { response in
                        #expect(response.status == .notFound)
                    }
                }
                // Mallory did not become a reader, and nothing was sent.
                try await client.execute(uri: "/api/notifications/\(upload.id)", method: .get, headers: mallory) { response in
                    #expect(response.status == .notFound)
                }
                #expect(herald.apns.notifications(for: token).isEmpty)
                #expect(try await herald.store.claimNotification(now: Date(), lease: .seconds(1), owner: "test") == nil)
            }
        }
    }

    @Test func theAlertStyleIsMutableContentWithTheContentsURL() async throws {
        try await TestHerald.withHerald(configure: { $0.publicURL = "https://push.example.com/" }) { herald in
            try await herald.application().test(.router) { client in
                let alice = try await client.signUp("alice")
                let bob = try await client.signUp("bob")
                let iPhone = herald.apns.registerDevice(topic: TestHerald.topic)
                let android = herald.fcm.registerDevice()
                _ = try await client.register(bob, handle: iPhone, platform: "apns")
                _ = try await client.register(bob, handle: android, platform: "fcm")
                let upload = try await Self.upload(client, alice, bytes: Array("https://example.com/party\r\n".utf8), type: "text/uri-list")
                try await client.execute(
                    uri: "/api/notifications/rich?to_tag=bob&style=alert", method: .post, headers: alice,
                    body: .json(#"{"richId":"\#(upload.id)","message":"Party tonight"}"#)
                ) { response in
                    #expect(response.status == .ok)
                }
                let url = "https://push.example.com/api/notifications/\(upload.id)"
                let apns = try #require(herald.apns.notifications(for: iPhone).first)
                #expect(apns.headers["apns-push-type"] == "alert")
                let payload = try JSONDecoder().decode(JSONValue.self, from: Data(apns.payload.utf8))
                #expect(payload["aps"]?["mutable-content"] == .number(1))
                #expect(payload["aps"]?["alert"]?["body"] == .string("Party tonight"))
                #expect(payload["richUrl"] == .string(url))
                #expect(payload["richType"] == .string("url"))
                #expect(payload["richContentType"] == .string("text/uri-list"))
                #expect(payload["richId"] == .string(upload.id))

                let fcm = try #require(herald.fcm.notifications(for: android).first)
                let message = try JSONDecoder().decode(JSONValue.self, from: Data(fcm.payload.utf8))
                #expect(message["notification"]?["body"] == .string("Party tonight"))
                #expect(message["data"]?["richUrl"] == .string(url))
            }
        }
    }

    @Test func withoutPublicURLTheURLComesFromTheRequestsHost() async throws {
        try await TestHerald.withHerald { herald in
            try await herald.application().test(.router) { client in
                let alice = try await client.signUp("alice")
                let iPhone = herald.apns.registerDevice(topic: TestHerald.topic)
                _ = try await client.register(alice, handle: iPhone, platform: "apns")
                let upload = try await Self.upload(client, alice)
                try await client.execute(
                    uri: "/api/notifications/rich?to_tag=alice&style=alert", method: .post, headers: alice,
                    body: .json(#"{"richId":"\#(upload.id)","message":"Me"}"#)
                ) { response in
                    #expect(response.status == .ok)
                }
                let apns = try #require(herald.apns.notifications(for: iPhone).first)
                let payload = try JSONDecoder().decode(JSONValue.self, from: Data(apns.payload.utf8))
                #expect(payload["richUrl"] == .string("http://localhost/api/notifications/\(upload.id)"))
            }
        }
    }

    @Test(arguments: [
        ("?to_tag=bob&style=loud", #"{"richId":"AAAAAAAAAAAAAAAAAAAAAA","message":"m"}"#, HTTPResponse.Status.badRequest, "style"),
        ("?to_tag=bob", #"{"message":"m"}"#, .badRequest, "richId"),
        ("?to_tag=bob", #""just text""#, .badRequest, "richId"),
        ("", #"{"richId":"AAAAAAAAAAAAAAAAAAAAAA","message":"m"}"#, .badRequest, "to_tag"),
    ])
    func badSendsAreRefused(query: String, body: String, status: HTTPResponse.Status, message: String) async throws {
        try await TestHerald.withHerald { herald in
            try await herald.application().test(.router) { client in
                let alice = try await client.signUp("alice")
                try await client.execute(uri: "/api/notifications/rich\(query)", method: .post, headers: alice, body: .json(body)) { response in
                    #expect(response.status == status)
                    #expect(response.body.string.contains(message), "\(response.body.string)")
                }
                #expect(try await herald.store.claimNotification(now: Date(), lease: .seconds(1), owner: "test") == nil)
            }
        }
    }

    @Test func expiredContentIs404AndTheSweepRemovesItsBytes() async throws {
        try await TestHerald.withHerald { herald in
            try await herald.application().test(.router) { client in
                let alice = try await client.signUp("alice")
                let old = try await Self.upload(client, alice)
                herald.clock.advance(by: .seconds(3600))
                let fresh = try await Self.upload(client, alice)
                herald.clock.advance(by: herald.server.richRetention - .seconds(1800))
                try await client.execute(uri: "/api/notifications/\(old.id)", method: .get, headers: alice) { response in
                    #expect(response.status == .notFound)
                }
                try await client.execute(
                    uri: "/api/notifications/rich?to_tag=alice", method: .post, headers: alice,
                    body: .json(#"{"richId":"\#(old.id)","message":"too late"}"#)
                ) { response in
                    #expect(response.status == .notFound)
                }
                let sweeper = ContentSweeper(store: herald.store, configuration: herald.server, logger: Logger(label: "test"))
                #expect(try await sweeper.sweep().richContent == 1)
                #expect(try await Self.stored(in: herald) == [fresh.id])
                try await client.execute(uri: "/api/notifications/\(fresh.id)", method: .get, headers: alice) { response in
                    #expect(response.status == .ok)
                }
            }
        }
    }

    @Test func richPushTurnedOffIsUnavailable() async throws {
        try await TestHerald.withHerald(configure: { $0.richPushEnabled = false }) { herald in
            try await herald.application().test(.router) { client in
                var alice = try await client.signUp("alice")
                alice[.contentType] = "image/png"
                try await client.execute(uri: "/api/rich", method: .post, headers: alice, body: ByteBuffer(bytes: Self.image)) { response in
                    #expect(response.status == .serviceUnavailable)
                    #expect(response.body.string.contains("rich push is not enabled"))
                }
                try await client.execute(uri: "/api/notifications/2", method: .get, headers: alice) { response in
                    #expect(response.status == .serviceUnavailable)
                }
            }
        }
    }
}

extension Array where Element == ByteBuffer {
    /// The buffers as an async sequence, as a request body arrives.
    var async: AsyncStream<ByteBuffer> {
        AsyncStream { continuation in
            for buffer in self { continuation.yield(buffer) }
            continuation.finish()
        }
    }
}
