import Foundation
import HeraldCore
import HeraldEmulator
import HeraldHub
import HeraldTestSupport
import Testing

/// `Idempotency-Key` on the hub API's sends, on the wire against the emulated push services: a
/// repeat is answered with the first notification and reaches no device again; another
/// request under the key is a 422; concurrent repeats create one notification; a send without
/// a key is as before; a malformed key is a 400 that sends nothing.
@Suite struct HubAPIIdempotencyTests {
    static let hub = HubTestServer.hubName
    static let version = HubTestServer.apiVersion

    /// An APNs device registered with the tag `everyone`.
    static func appleDevice(_ server: HubTestServer) async throws -> String {
        let token = server.herald.apns.registerDevice(topic: TestHerald.topic)
        _ = try await server.createRegistration(
            Atom.open("AppleRegistrationDescription") + "<Tags>everyone</Tags><DeviceToken>\(token)</DeviceToken></AppleRegistrationDescription>"
        )
        return token
    }

    static func sendToEveryone(_ server: HubTestServer, _ body: String, key: String?) async throws -> WireResponse {
        var headers = [("apns-push-type", "alert")]
        if let key { headers.append(("Idempotency-Key", key)) }
        return try await server.send(format: "apple", body, tags: "everyone", headers: headers)
    }

    @Test func aRetriedSendReachesTheDeviceOnceAndAnswersTheSameLocation() async throws {
        try await HubTestServer.withServer { server in
            let token = try await Self.appleDevice(server)
            let body = #"{"aps":{"alert":"Goal! 1-0"}}"#
            let first = try await Self.sendToEveryone(server, body, key: "order-4711")
            let id = try server.acceptedID(first)
            #expect(first.header("Idempotent-Replayed") == nil)
            _ = try await server.finishedDetails(id)

            let again = try await Self.sendToEveryone(server, body, key: "order-4711")
            #expect(try server.acceptedID(again) == id)
            #expect(again.header("Location") == first.header("Location"))
            #expect(again.header("Idempotent-Replayed") == "true")

            // The same key and request after delivery ended: still the first, nothing sent.
            try await Task.sleep(for: .milliseconds(300))
            #expect(server.herald.apns.notifications(for: token).count == 1)

            // The same key with another body: 422 naming the key, and nothing sent.
            let other = try await Self.sendToEveryone(server, #"{"aps":{"alert":"Goal! 2-0"}}"#, key: "order-4711")
            let detail = expectHubError(other, 422)
            #expect(detail.contains("'order-4711'"), "\(detail)")
            // Another header that changes the send is another request too.
            let otherTags = try await server.send(
                format: "apple", body, tags: "nobody", headers: [("apns-push-type", "alert"), ("Idempotency-Key", "order-4711")]
            )
            _ = expectHubError(otherTags, 422)
            try await Task.sleep(for: .milliseconds(300))
            #expect(server.herald.apns.notifications(for: token).count == 1)
        }
    }

    @Test func concurrentDuplicatesCreateOneNotification() async throws {
        try await HubTestServer.withServer { server in
            let token = try await Self.appleDevice(server)
            let body = #"{"aps":{"alert":"once"}}"#
            let responses = try await withThrowingTaskGroup(of: WireResponse.self) { group in
                for _ in 0..<6 { group.addTask { try await Self.sendToEveryone(server, body, key: "burst-1") } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let ids = Set(try responses.map { try server.acceptedID($0) })
            #expect(ids.count == 1)
            #expect(responses.filter { $0.header("Idempotent-Replayed") == nil }.count == 1)
            #expect(responses.filter { $0.header("Idempotent-Replayed") == "true" }.count == 5)
            _ = try await server.finishedDetails(try #require(ids.first))
            try await Task.sleep(for: .milliseconds(300))
            #expect(server.herald.apns.notifications(for: token).count == 1)
        }
    }

    /// A hub's own retention: once it ends, the key is a new send's (even with another
    /// request), and the sweep forgets the keys past it.
    @Test func aHubsRetentionEndsItsKeys() async throws {
        try await HubTestServer.withServer { server in
            let updated = try await server.catalog.setIdempotencyRetention(name: Self.hub, .seconds(1))
            #expect(updated.idempotencyRetention == .seconds(1))
            let token = try await Self.appleDevice(server)
            let first = try server.acceptedID(try await Self.sendToEveryone(server, #"{"aps":{"alert":"one"}}"#, key: "short-1"))
            try await Task.sleep(for: .milliseconds(1100))
            let later = try await Self.sendToEveryone(server, #"{"aps":{"alert":"two"}}"#, key: "short-1")
            let second = try server.acceptedID(later)
            #expect(second != first)
            #expect(later.header("Idempotent-Replayed") == nil)
            for id in [first, second] { _ = try await server.finishedDetails(id) }
            #expect(server.herald.apns.notifications(for: token).count == 2)

            let engine = try #require(try await server.registry.engine(named: Self.hub))
            try await Task.sleep(for: .milliseconds(1100))
            #expect(try await engine.forgetIdempotencyKeys() == 1)
            #expect(try await engine.forgetIdempotencyKeys() == 0)
            await #expect(throws: HeraldError.self) { _ = try await server.catalog.setIdempotencyRetention(name: Self.hub, .seconds(31 * 24 * 3600)) }
        }
    }

    @Test func sendsWithoutAKeyAreAsBefore() async throws {
        try await HubTestServer.withServer { server in
            let token = try await Self.appleDevice(server)
            let body = #"{"aps":{"alert":"twice"}}"#
            let first = try await Self.sendToEveryone(server, body, key: nil)
            let second = try await Self.sendToEveryone(server, body, key: nil)
            let ids = [try server.acceptedID(first), try server.acceptedID(second)]
            #expect(ids[0] != ids[1])
            #expect(first.header("Idempotent-Replayed") == nil && second.header("Idempotent-Replayed") == nil)
            for id in ids { _ = try await server.finishedDetails(id) }
            #expect(server.herald.apns.notifications(for: token).count == 2)
        }
    }

    @Test(arguments: [
        ("", "is empty"),
        (String(repeating: "k", count: 256), "at most 255"),
        ("clé", "not printable ASCII"),
    ])
    func aMalformedKeyIsA400ThatSendsNothing(key: String, says: String) async throws {
        try await HubTestServer.withServer { server in
            let token = try await Self.appleDevice(server)
            let response = try await Self.sendToEveryone(server, #"{"aps":{"alert":"no"}}"#, key: key)
            let detail = expectHubError(response, 400)
            #expect(detail.contains("Idempotency-Key") && detail.contains(says), "\(detail)")
            // A key of 255 characters is fine.
            let longest = try await Self.sendToEveryone(server, #"{"aps":{"alert":"yes"}}"#, key: String(repeating: "k", count: 255))
            _ = try await server.finishedDetails(try server.acceptedID(longest))
            #expect(server.herald.apns.notifications(for: token).map { ReceiptIDs.removed(from: $0.payload) } == [#"{"aps":{"alert":"yes"}}"#])
        }
    }

    /// Direct, batch and scheduled sends, and template sends, take keys as well; a test send,
    /// delivered at once and not kept, refuses one.
    @Test func everyKindOfSendTakesAKey() async throws {
        try await HubTestServer.withServer { server in
            let fcm = server.herald.fcm.registerDevice()
            let direct: @Sendable () async throws -> WireResponse = {
                try await server.wire(
                    .POST, "/\(Self.hub)/messages?\(Self.version)&direct",
                    headers: [
                        ("Content-Type", "application/json"), ("ServiceBusNotification-Format", "fcmv1"),
                        ("ServiceBusNotification-DeviceHandle", fcm), ("Idempotency-Key", "direct-1"),
                    ],
                    body: Data(#"{"message":{"data":{"n":"1"}}}"#.utf8)
                )
            }
            let firstDirect = try await direct()
            let directID = try server.acceptedID(firstDirect)
            _ = try await server.finishedDetails(directID)
            let againDirect = try await direct()
            #expect(try server.acceptedID(againDirect) == directID)
            #expect(againDirect.header("Idempotent-Replayed") == "true")

            // A batch: the same parts under another boundary are the same request.
            let devices = try String(decoding: JSONSerialization.data(withJSONObject: [fcm]), as: UTF8.self)
            let batch: @Sendable (String) async throws -> WireResponse = { boundary in
                let body = [
                    "--\(boundary)", "Content-Type: application/json", #"Content-Disposition: inline; name="notification""#, "",
                    #"{"message":{"data":{"n":"2"}}}"#, "--\(boundary)", "Content-Type: application/json",
                    #"Content-Disposition: inline; name="devices""#, "", devices, "--\(boundary)--", "",
                ].joined(separator: "\r\n")
                return try await server.wire(
                    .POST, "/\(Self.hub)/messages/$batch?\(Self.version)&direct",
                    headers: [
                        ("Content-Type", "multipart/mixed; boundary=\"\(boundary)\""), ("ServiceBusNotification-Format", "fcmv1"),
                        ("Idempotency-Key", "batch-1"),
                    ],
                    body: Data(body.utf8)
                )
            }
            let batchID = try server.acceptedID(try await batch("b-one"))
            _ = try await server.finishedDetails(batchID)
            let againBatch = try await batch("b-two")
            #expect(try server.acceptedID(againBatch) == batchID)
            #expect(againBatch.header("Idempotent-Replayed") == "true")
            #expect(server.herald.fcm.notifications(for: fcm).count == 2)

            // A scheduled send answers its first Location again.
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "UTC")
            formatter.dateFormat = "yyyy-MM-dd'T'HH:mm:ss"
            let at = formatter.string(from: Date().addingTimeInterval(3600))
            let schedule: @Sendable () async throws -> WireResponse = {
                try await server.wire(
                    .POST, "/\(Self.hub)/schedulednotifications?\(Self.version)",
                    headers: [
                        ("ServiceBusNotification-Format", "template"), ("ServiceBusNotification-ScheduleTime", at),
                        ("Content-Type", "application/json"), ("Idempotency-Key", "later-1"),
                    ],
                    body: Data(#"{"message":"later"}"#.utf8)
                )
            }
            let scheduled = try await schedule()
            let scheduledAgain = try await schedule()
            #expect(try server.acceptedID(scheduledAgain, under: "schedulednotifications") == server.acceptedID(scheduled, under: "schedulednotifications"))
            #expect(scheduledAgain.header("Location") == scheduled.header("Location"))
            #expect(scheduledAgain.header("Idempotent-Replayed") == "true")

            // A test send refuses a key.
            let test = try await server.send(format: "template", #"{"message":"t"}"#, query: "&test", headers: [("Idempotency-Key", "test-1")])
            #expect(expectHubError(test, 400).contains("Idempotency-Key"))
        }
    }
}
