import Foundation
import HeraldCore
import HeraldEmulator
import HeraldHub
import HeraldSQLite
import HeraldServer
import HeraldStore
import HeraldTestSupport
import Hummingbird
import HummingbirdTesting
import Logging
import Testing

@Suite struct SecurePushTests {
    static let secret = "PIN 8461, the vault code is hunter2-top-secret"
    static let secretBody = #"{"note":"\#(secret)","amount":1250.5,"tags":["a","b"],"nested":{"ok":true,"none":null}}"#

    /// POST /api/notifications/secure; returns the answer's JSON.
    static func sendSecure(
        _ client: some TestClientProtocol,
        from headers: HTTPFields,
        to user: String,
        body: String = secretBody,
        query: String = ""
    ) async throws -> JSONValue {
        try await client.execute(
            uri: "/api/notifications/secure?to_tag=\(user)\(query)", method: .post, headers: headers, body: .json(body)
        ) { response in
            guard response.status == .ok else { throw TestFailure("secure send: \(response.status) \(response.body.string)") }
            return try JSONDecoder().decode(JSONValue.self, from: response.body)
        }
    }

    static func secureID(_ answer: JSONValue) throws -> String {
        guard case .string(let id) = answer["secureId"] else { throw TestFailure("no secureId in \(answer)") }
        return id
    }

    /// The whole flow: bob sends alice a secret; her iPhone and her Android phone receive
    /// only its id; she fetches it once unread, then read.
    @Test func theDeviceReceivesOnlyTheIdAndTheRecipientFetchesThePayload() async throws {
        try await TestHerald.withHerald { herald in
            try await herald.application().test(.router) { client in
                let alice = try await client.signUp("alice")
                let bob = try await client.signUp("bob")
                let iPhone = herald.apns.registerDevice(topic: TestHerald.topic)
                let android = herald.fcm.registerDevice()
                _ = try await client.register(alice, handle: iPhone, platform: "apns")
                _ = try await client.register(alice, handle: android, platform: "fcm")

                let answer = try await Self.sendSecure(client, from: bob, to: "alice")
                let id = try Self.secureID(answer)
                #expect(Int32(id).map { (1...Int32.max).contains($0) && String($0) == id } == true, "\(id)")
                #expect(answer["state"] == .string("Completed"))
                #expect(answer["success"] == .number(2))

                let apns = try #require(herald.apns.notifications(for: iPhone).first)
                #expect(ReceiptIDs.removed(from: apns.payload) == #"{"aps":{"content-available":1},"secureId":"\#(id)"}"#)
                #expect(apns.headers["apns-push-type"] == "background")
                #expect(apns.headers["apns-priority"] == "5")
                let fcm = try #require(herald.fcm.notifications(for: android).first)
                let fcmJSON = try JSONDecoder().decode(JSONValue.self, from: Data(fcm.payload.utf8))
                #expect(ReceiptIDs.removed(from: fcmJSON["data"]) == .object([("secureId", .string(id))]))
                #expect(fcmJSON["android"]?["priority"] == .string("high"))
                #expect(fcmJSON["notification"] == nil)
                for received in [apns.payload, fcm.payload] {
                    #expect(!received.contains("hunter2"))
                    #expect(!received.contains("8461"))
                }

                let expectedPayload = try JSONDecoder().decode(JSONValue.self, from: Data(Self.secretBody.utf8))
                for expectRead in [false, true] {
                    try await client.execute(uri: "/api/notifications/\(id)", method: .get, headers: alice) { response in
                        #expect(response.status == .ok)
                        #expect(response.headers[.cacheControl] == "no-store")
                        let fetched = try JSONDecoder().decode(SecurePayload.self, from: response.body)
                        #expect(fetched == SecurePayload(id: id, payload: expectedPayload, read: expectRead))
                        // The tutorial's keys.
                        let raw = try JSONDecoder().decode(JSONValue.self, from: response.body)
                        #expect(raw["Read"] == .bool(expectRead))
                        #expect(raw["Id"] == .string(id))
                    }
                }
            }
        }
    }

    /// Another user (even the sender), an unknown id, a malformed id and an expired id all
    /// get the same 404, and none of them marks the message read.
    @Test func nobodyButTheRecipientCanReadItAndNothingHintsItExists() async throws {
        try await TestHerald.withHerald { herald in
            try await herald.application().test(.router) { client in
                let alice = try await client.signUp("alice")
                let bob = try await client.signUp("bob")
                let mallory = try await client.signUp("mallory")
                let id = try Self.secureID(try await Self.sendSecure(client, from: bob, to: "alice"))

                var bodies: Set<String> = []
                let attempts: [(HTTPFields, String)] = [
                    (mallory, id), (bob, id), (mallory, "AAAAAAAAAAAAAAAAAAAAAA"), (alice, "AAAAAAAAAAAAAAAAAAAAAA"),
                    (alice, "not-an-id"), (alice, id + "x"), (alice, "0" + id), (alice, " " + id), (alice, String(Int32(id)! &+ 2)),
                ]
                for (headers, target) in attempts {
                    try await client.execute(uri: "/api/notifications/\(target)", method: .get, headers: headers) { response in
                        #expect(response.status == .notFound, "\(target)")
                        bodies.insert(response.body.string)
                    }
                }
                #expect(bodies.count == 1)

                // Still unread for alice.
                try await client.execute(uri: "/api/notifications/\(id)", method: .get, headers: alice) { response in
                    let fetched = try JSONDecoder().decode(SecurePayload.self, from: response.body)
                    #expect(fetched.read == false)
                }
                // After the retention period it is gone, for alice too, with the same answer.
                herald.clock.advance(by: herald.server.secureRetention + .seconds(1))
                try await client.execute(uri: "/api/notifications/\(id)", method: .get, headers: alice) { response in
                    #expect(response.status == .notFound)
                    #expect(bodies.contains(response.body.string))
                }
            }
        }
    }

    @Test func withoutCredentialsIt401s() async throws {
        try await TestHerald.withHerald { herald in
            try await herald.application().test(.router) { client in
                let bob = try await client.signUp("bob")
                _ = try await client.signUp("alice")
                let id = try Self.secureID(try await Self.sendSecure(client, from: bob, to: "alice"))
                try await client.execute(uri: "/api/notifications/\(id)", method: .get) { response in
                    #expect(response.status == .unauthorized)
                    #expect(!response.body.string.contains("hunter2"))
                }
                try await client.execute(uri: "/api/notifications/\(id)", method: .get, headers: .bearer("hrd_forged")) { response in
                    #expect(response.status == .unauthorized)
                }
                try await client.execute(
                    uri: "/api/notifications/secure?to_tag=alice", method: .post, body: .json(Self.secretBody)
                ) { response in
                    #expect(response.status == .unauthorized)
                }
            }
        }
    }

    /// The database file (and its WAL) holds the ciphertext, never the plaintext.
    @Test func thePayloadIsEncryptedAtRest() async throws {
        try await TestHerald.withHerald { herald in
            try await herald.application().test(.router) { client in
                let bob = try await client.signUp("bob")
                _ = try await client.signUp("alice")
                let id = try Self.secureID(try await Self.sendSecure(client, from: bob, to: "alice"))

                var files = Data()
                for suffix in ["", "-wal"] {
                    files.append(FileManager.default.contents(atPath: herald.catalog.directoryStorage!.storePath(of: TestHerald.appHubName) + suffix) ?? Data())
                }
                // The right files: the row is there, by its id.
                #expect(files.range(of: Data(id.utf8)) != nil)
                for needle in ["hunter2", "8461", "vault code"] {
                    #expect(files.range(of: Data(needle.utf8)) == nil, "'\(needle)' is stored in the clear")
                }
            }
        }
    }

    /// The ciphertext is bound to its id and recipient: moved to another row, it does not open.
    @Test func aSealedPayloadMovedToAnotherIdOrUserDoesNotOpen() async throws {
        try await TestHerald.withHerald { herald in
            try await herald.application().test(.router) { client in
                let alice = try await client.signUp("alice")
                let bob = try await client.signUp("bob")
                let mallory = try await client.signUp("mallory")
                let forAlice = try Self.secureID(try await Self.sendSecure(client, from: bob, to: "alice"))
                let forMallory = try Self.secureID(
                    try await Self.sendSecure(client, from: bob, to: "mallory", body: #""nothing to see""#)
                )
                // Mallory copies alice's ciphertext into her own message…
                try await herald.store.executeForTesting(
                    "UPDATE secure_messages SET sealed = (SELECT sealed FROM secure_messages WHERE id = '\(forAlice)') WHERE id = '\(forMallory)'"
                )
                try await client.execute(uri: "/api/notifications/\(forMallory)", method: .get, headers: mallory) { response in
                    #expect(response.status == .internalServerError)
                    #expect(!response.body.string.contains("hunter2"))
                }
                // …or readdresses alice's message to herself.
                try await herald.store.executeForTesting("UPDATE secure_messages SET recipient = 'mallory' WHERE id = '\(forAlice)'")
                try await client.execute(uri: "/api/notifications/\(forAlice)", method: .get, headers: mallory) { response in
                    #expect(response.status == .internalServerError)
                    #expect(!response.body.string.contains("hunter2"))
                }
                try await client.execute(uri: "/api/notifications/\(forAlice)", method: .get, headers: alice) { response in
                    #expect(response.status == .notFound)
                }
            }
        }
    }

    @Test func withoutAKeySecurePushIsUnavailable() async throws {
        try await TestHerald.withHerald(configure: { $0.secureKey = nil }) { herald in
            try await herald.application().test(.router) { client in
                let bob = try await client.signUp("bob")
                try await client.execute(
                    uri: "/api/notifications/secure?to_tag=alice", method: .post, headers: bob, body: .json(Self.secretBody)
                ) { response in
                    #expect(response.status == .serviceUnavailable)
                    #expect(response.body.string.contains("secure push is not enabled"))
                }
                try await client.execute(uri: "/api/notifications/AAAAAAAAAAAAAAAAAAAAAA", method: .get, headers: bob) { response in
                    #expect(response.status == .serviceUnavailable)
                }
                #expect(try await herald.store.claimNotification(now: Date(), lease: .seconds(1), owner: "test") == nil)
            }
        }
    }

    @Test(arguments: [
        ("?to_tag=alice", "", HTTPResponse.Status.badRequest, "empty"),
        ("?to_tag=alice", "{not json", .badRequest, "not valid JSON"),
        ("", #"{"a":1}"#, .badRequest, "to_tag"),
        ("?to_tag=alice&pns=mpns", #"{"a":1}"#, .badRequest, "retired"),
    ])
    func badRequestsChangeNothing(query: String, body: String, status: HTTPResponse.Status, message: String) async throws {
        try await TestHerald.withHerald { herald in
            try await herald.application().test(.router) { client in
                let bob = try await client.signUp("bob")
                try await client.execute(uri: "/api/notifications/secure\(query)", method: .post, headers: bob, body: .json(body)) { response in
                    #expect(response.status == status)
                    #expect(response.body.string.contains(message), "\(response.body.string)")
                }
                #expect(try await herald.store.claimNotification(now: Date(), lease: .seconds(1), owner: "test") == nil)
                #expect(try await herald.store.integerForTesting("SELECT count(*) FROM secure_messages") == 0)
            }
        }
    }

    /// The plain notify route is unchanged beside the new ones.
    @Test func thePlainNotifyRouteStillWorks() async throws {
        try await TestHerald.withHerald { herald in
            try await herald.application().test(.router) { client in
                let alice = try await client.signUp("alice")
                let token = herald.apns.registerDevice(topic: TestHerald.topic)
                _ = try await client.register(alice, handle: token)
                try await client.execute(uri: "/api/notifications?pns=apns&to_tag=alice", method: .post, headers: alice, body: .json(#""hi""#)) { response in
                    #expect(response.status == .ok)
                    let answer = try JSONDecoder().decode(JSONValue.self, from: response.body)
                    #expect(answer["secureId"] == nil)
                }
                #expect(herald.apns.notifications(for: token).first.map { ReceiptIDs.removed(from: $0.payload) } == #"{"aps":{"alert":"From alice: hi"}}"#)
            }
        }
    }

    @Test func expiredMessagesAreSweptFromTheDatabase() async throws {
        try await TestHerald.withHerald { herald in
            try await herald.application().test(.router) { client in
                let bob = try await client.signUp("bob")
                _ = try await client.signUp("alice")
                _ = try await Self.sendSecure(client, from: bob, to: "alice")
                let sweeper = ContentSweeper(store: herald.store, configuration: herald.server, logger: .init(label: "test"))
                #expect(try await sweeper.sweep().secureMessages == 0)
                herald.clock.advance(by: herald.server.secureRetention)
                #expect(try await sweeper.sweep().secureMessages == 1)
                #expect(try await herald.store.integerForTesting("SELECT count(*) FROM secure_messages") == 0)
            }
        }
    }
}

@Suite struct SecurePayloadKeyTests {
    private func temporaryPath() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("herald-key-\(UUID().uuidString)/keys/secure-payload.key").path
    }

    @Test func createsAnOwnerOnlyFileAndLoadsTheSameKeyAgain() throws {
        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: URL(fileURLWithPath: path).deletingLastPathComponent().deletingLastPathComponent().path) }
        let created = try SecurePayloadKey.loadOrCreate(path: path)
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        let directory = try FileManager.default.attributesOfItem(atPath: URL(fileURLWithPath: path).deletingLastPathComponent().path)
        #expect((directory[.posixPermissions] as? NSNumber)?.intValue == 0o700)
        let loaded = try SecurePayloadKey.loadOrCreate(path: path)
        #expect(loaded.fingerprint == created.fingerprint)
        // The file is a line of base64; no leftover temporary files.
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(Data(base64Encoded: text.trimmingCharacters(in: .whitespacesAndNewlines))?.count == 32)
        #expect(try FileManager.default.contentsOfDirectory(atPath: URL(fileURLWithPath: path).deletingLastPathComponent().path) == ["secure-payload.key"])
        // Nothing prints the key.
        let base64 = text.trimmingCharacters(in: .whitespacesAndNewlines)
        for shown in ["\(loaded)", String(reflecting: loaded), "\(ServerConfiguration.with(loaded))"] {
            #expect(!shown.contains(base64))
        }
    }

    @Test func rawKeysAreAcceptedAndWrongSizesRefused() throws {
        let path = temporaryPath()
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent()
        defer { try? FileManager.default.removeItem(at: directory.deletingLastPathComponent()) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try Data(repeating: 7, count: 32).write(to: URL(fileURLWithPath: path))
        #expect(try SecurePayloadKey.loadOrCreate(path: path).fingerprint == SecurePayloadKey(bytes: Data(repeating: 7, count: 32)).fingerprint)
        try Data("too short".utf8).write(to: URL(fileURLWithPath: path))
        #expect(throws: SecurePayloadKeyError(code: .invalidKey, message: "")) { try SecurePayloadKey.loadOrCreate(path: path) }
        #expect(throws: SecurePayloadKeyError.self) { try SecurePayloadKey(bytes: Data(count: 16)) }
    }

    /// A key handed in from outside (a mounted secret) is read, never created nor written; a
    /// file that is missing, a directory or not a 256-bit key is refused with its path, never
    /// its content.
    @Test func aGivenKeyFileIsReadAndNeverCreated() throws {
        let path = temporaryPath()
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent()
        defer { try? FileManager.default.removeItem(at: directory.deletingLastPathComponent()) }

        #expect(throws: SecurePayloadKeyError(code: .fileSystem, message: "")) { try SecurePayloadKey.read(path: path) }
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(!FileManager.default.fileExists(atPath: directory.path))

        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        #expect(throws: SecurePayloadKeyError(code: .fileSystem, message: "")) { try SecurePayloadKey.read(path: path) }
        try FileManager.default.removeItem(atPath: path)

        let key = SecurePayloadKey.generate()
        let base64 = Data((0..<32).map { UInt8($0) }).base64EncodedString()
        try Data((base64 + "\n").utf8).write(to: URL(fileURLWithPath: path))
        let read = try SecurePayloadKey.read(path: path)
        #expect(read.fingerprint == (try SecurePayloadKey(bytes: Data((0..<32).map { UInt8($0) }))).fingerprint)
        #expect(read.fingerprint != key.fingerprint)
        // Read again by another process (another node), the same key.
        #expect(try SecurePayloadKey.read(path: path).fingerprint == read.fingerprint)

        try Data(repeating: 9, count: 32).write(to: URL(fileURLWithPath: path))
        #expect(try SecurePayloadKey.read(path: path).fingerprint == (try SecurePayloadKey(bytes: Data(repeating: 9, count: 32))).fingerprint)

        let short = Data("c2hvcnQtc2VjcmV0LWtleQ==".utf8)
        try short.write(to: URL(fileURLWithPath: path))
        do {
            _ = try SecurePayloadKey.read(path: path)
            Issue.record("a 16-byte key was accepted")
        } catch {
            #expect(error.code == .invalidKey)
            #expect(error.message.contains(path))
            #expect(!error.message.contains("c2hvcnQtc2VjcmV0LWtleQ"))
        }
    }
}

extension ServerConfiguration {
    static func with(_ key: SecurePayloadKey) -> ServerConfiguration {
        var configuration = ServerConfiguration()
        configuration.secureKey = key
        return configuration
    }
}
