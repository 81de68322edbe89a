import Foundation
import HeraldCore
import HeraldSQLite
import HeraldServer
import HeraldStore
import Hummingbird
import HummingbirdTesting
import Testing

@Suite struct RegisterTests {
    static let token = String(repeating: "ab", count: 32)

    @Test func registerAddsTheUsernameTag() async throws {
        try await TestHerald.withHerald { herald in
            try await herald.application().test(.router) { client in
                let alice = try await client.signUp("alice")
                let id = try await client.register(alice, handle: Self.token.uppercased(), tags: ["sports"])
                let stored = try #require(try await herald.store.registration(id: id))
                #expect(stored.tags == ["sports", "username:alice"])
                #expect(stored.handle == Self.token)  // APNs tokens are stored in lowercase hex
                #expect(stored.owner == "alice")
                #expect(stored.platform == .apns)
            }
        }
    }

    @Test func postRegisterReusesTheCallersRegistrationAndDeletesDuplicates() async throws {
        try await TestHerald.withHerald { herald in
            try await herald.application().test(.router) { client in
                let alice = try await client.signUp("alice")
                // Two registrations of one handle, as an older backend or a race leaves them.
                let older = Registration(
                    id: "1-1-1", platform: .apns, handle: Self.token, tags: ["username:alice"], owner: "alice",
                    createdAt: Date(timeIntervalSinceNow: -60))
                let newer = Registration(id: "2-2-1", platform: .apns, handle: Self.token, tags: ["username:alice"], owner: "alice")
                try await herald.store.insertRegistrations([older, newer])
                try await client.execute(uri: "/api/register?handle=\(Self.token)", method: .post, headers: alice) { response in
                    #expect(response.status == .ok)
                    #expect(response.headers[.contentType]?.hasPrefix("application/json") == true)
                    let id = try JSONDecoder().decode(String.self, from: response.body)
                    #expect(id == "1-1-1")
                }
                #expect(try await herald.store.registrations(handle: Self.token, platform: nil).map(\.id) == ["1-1-1"])
            }
        }
    }

    @Test func aNewHandleGetsAFreshUnguessableID() async throws {
        try await TestHerald.withHerald { herald in
            try await herald.application().test(.router) { client in
                let alice = try await client.signUp("alice")
                var ids = Set<String>()
                for _ in 0..<5 {
                    try await client.execute(uri: "/api/register?handle=\(Self.token)", method: .post, headers: alice) { response in
                        ids.insert(try JSONDecoder().decode(String.self, from: response.body))
                    }
                }
                #expect(ids.count == 5)
                #expect(ids.allSatisfy { $0.count >= 30 && RegistrationID.isWellFormed($0) })
            }
        }
    }

    @Test func anIDThatWasNeverIssuedIsGone() async throws {
        try await TestHerald.withHerald { herald in
            try await herald.application().test(.router) { client in
                let alice = try await client.signUp("alice")
                try await client.execute(
                    uri: "/api/register/123-456-1", method: .put, headers: alice,
                    body: .json(#"{"Platform":"apns","Handle":"\#(Self.token)","Tags":[]}"#)
                ) { response in
                    #expect(response.status == .gone)
                }
                #expect(try await herald.store.registrationCount() == 0)
            }
        }
    }

    @Test func aDeletedRegistrationIsGoneSoTheDeviceAsksAgain() async throws {
        try await TestHerald.withHerald { herald in
            try await herald.application().test(.router) { client in
                let alice = try await client.signUp("alice")
                let id = try await client.register(alice, handle: Self.token)
                try await client.execute(uri: "/api/register/\(id)", method: .delete, headers: alice) { response in
                    #expect(response.status == .ok)
                }
                try await client.execute(
                    uri: "/api/register/\(id)", method: .put, headers: alice,
                    body: .json(#"{"Platform":"apns","Handle":"\#(Self.token)"}"#)
                ) { response in
                    #expect(response.status == .gone)
                }
                try await client.execute(uri: "/api/register/\(id)", method: .delete, headers: alice) { response in
                    #expect(response.status == .notFound)
                }
            }
        }
    }

    @Test(arguments: ["username:bob", "USERNAME:bob", "from:alice", "$UserId:{bob}", "$InstallationId:{x}"])
    func reservedTagsAreRefusedAndNothingChanges(tag: String) async throws {
        try await TestHerald.withHerald { herald in
            try await herald.application().test(.router) { client in
                let alice = try await client.signUp("alice")
                let id = try await client.register(alice, handle: Self.token, tags: ["news"])
                try await client.execute(
                    uri: "/api/register/\(id)", method: .put, headers: alice,
                    body: .json(#"{"Platform":"apns","Handle":"\#(Self.token)","Tags":["sports","\#(tag)"]}"#)
                ) { response in
                    #expect(response.status == .forbidden)
                    #expect(response.body.string.contains("reserved"))
                }
                #expect(try await herald.store.registration(id: id)?.tags == ["news", "username:alice"])
            }
        }
    }

    @Test func anotherUsersRegistrationCannotBeTouched() async throws {
        try await TestHerald.withHerald { herald in
            try await herald.application().test(.router) { client in
                let alice = try await client.signUp("alice")
                let mallory = try await client.signUp("mallory")
                let id = try await client.register(alice, handle: Self.token)
                let otherToken = String(repeating: "cd", count: 32)
                try await client.execute(
                    uri: "/api/register/\(id)", method: .put, headers: mallory,
                    body: .json(#"{"Platform":"apns","Handle":"\#(otherToken)","Tags":[]}"#)
                ) { response in
                    #expect(response.status == .forbidden)
                }
                try await client.execute(uri: "/api/register/\(id)", method: .delete, headers: mallory) { response in
                    #expect(response.status == .forbidden)
                }
                let stored = try #require(try await herald.store.registration(id: id))
                #expect(stored.handle == Self.token && stored.owner == "alice")
            }
        }
    }

    @Test func theLastUserToSignInOnADeviceOwnsIt() async throws {
        try await TestHerald.withHerald { herald in
            try await herald.application().test(.router) { client in
                let alice = try await client.signUp("alice")
                let bob = try await client.signUp("bob")
                let aliceID = try await client.register(alice, handle: Self.token)
                let bobID = try await client.register(bob, handle: Self.token)
                #expect(aliceID != bobID)
                // alice's registration of that device is gone: her notifications don't reach bob.
                #expect(try await herald.store.registration(id: aliceID) == nil)
                #expect(try await herald.store.registration(id: bobID)?.owner == "bob")
            }
        }
    }

    @Test(arguments: [
        (#"{"Platform":"mpns","Handle":"https://x"}"#, HTTPResponse.Status.badRequest, "retired"),
        (#"{"Platform":"blackberry","Handle":"x"}"#, .badRequest, "unknown platform"),
        (#"{"Handle":"abc"}"#, .badRequest, "Platform is required"),
        (#"{"Platform":"apns"}"#, .badRequest, "Handle is required"),
        (#"{"Platform":"apns","Handle":"xyz"}"#, .badRequest, "hexadecimal"),
        (#"{"Platform":"apns","Handle":"abcd"}"#, .badRequest, "64 to 200"),
        (#"{"Platform":"wns","Handle":"http://insecure"}"#, .badRequest, "https"),
        (#"{"Platform":"webpush","Handle":"https://push.example/1"}"#, .badRequest, "p256dh"),
        (#"{"Platform":"apns","Handle":"TOKEN","Tags":"sports"}"#, .badRequest, "array of strings"),
        (#"{"Platform":"apns","Handle":"TOKEN","Tags":["bad tag"]}"#, .badRequest, "tag"),
        (#"["apns"]"#, .badRequest, "Platform"),
        ("{", .badRequest, "not valid JSON"),
    ])
    func badRegistrationsAreRefused(body: String, status: HTTPResponse.Status, message: String) async throws {
        try await TestHerald.withHerald { herald in
            try await herald.application().test(.router) { client in
                let alice = try await client.signUp("alice")
                let id = try await client.register(alice, handle: Self.token, tags: ["news"])
                let before = try await herald.store.registration(id: id)
                try await client.execute(
                    uri: "/api/register/\(id)", method: .put, headers: alice,
                    body: .json(body.replacingOccurrences(of: "TOKEN", with: Self.token))
                ) { response in
                    #expect(response.status == status)
                    #expect(response.body.string.contains(message), "\(response.body.string)")
                }
                #expect(try await herald.store.registration(id: id) == before)
            }
        }
    }

    @Test func gcmIsAcceptedAsFCM() async throws {
        try await TestHerald.withHerald { herald in
            try await herald.application().test(.router) { client in
                let alice = try await client.signUp("alice")
                let id = try await client.register(alice, handle: "fcm-token:APA91b_test", platform: "gcm")
                #expect(try await herald.store.registration(id: id)?.platform == .fcm)
            }
        }
    }

    @Test func tooManyTagsAreRefused() async throws {
        try await TestHerald.withHerald { herald in
            try await herald.application().test(.router) { client in
                let alice = try await client.signUp("alice")
                let tags = (0..<60).map { "t\($0)" }
                do {
                    _ = try await client.register(alice, handle: Self.token, tags: tags)
                    Issue.record("60 tags of its own were accepted")
                } catch let failure as TestFailure {
                    #expect(failure.description.contains("400"))
                }
            }
        }
    }
}
