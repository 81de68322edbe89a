import Foundation
import HeraldServer
import Hummingbird
import HummingbirdTesting
import Testing

/// Sign-in tells nothing about which users exist, and guesses are limited.
@Suite struct SignInProtectionTests {
    static func signIn(_ client: some TestClientProtocol, _ user: String, _ password: String) async throws -> TestResponse {
        try await client.execute(uri: "/api/token", method: .post, body: .json(#"{"username":"\#(user)","password":"\#(password)"}"#))
    }

    /// An unknown user's sign-in checks a password hash of the same cost as a known user's
    /// wrong password, so the two take about as long (they differed by a factor of 150).
    @Test func anUnknownUserTakesAsLongAsAWrongPassword() async throws {
        try await TestHerald.withHerald(configure: { $0.bcryptCost = 10 }) { herald in
            try await herald.application().test(.router) { client in
                _ = try await client.signUp("alice")
                func median(_ user: String) async throws -> Double {
                    var times: [Double] = []
                    for _ in 0..<3 {
                        let start = ContinuousClock.now
                        let response = try await Self.signIn(client, user, "wrong-password")
                        times.append((ContinuousClock.now - start) / .seconds(1))
                        #expect(response.status == .unauthorized)
                        #expect(response.body.string.contains("wrong user name or password"))
                    }
                    return times.sorted()[1]
                }
                let wrongPassword = try await median("alice")
                let unknownUser = try await median("nobody")
                #expect(unknownUser > wrongPassword / 2, "unknown user \(unknownUser) s, wrong password \(wrongPassword) s")
                #expect(wrongPassword > unknownUser / 2, "unknown user \(unknownUser) s, wrong password \(wrongPassword) s")
            }
        }
    }

    /// Past the account's failures from one client, attempts get 429 with Retry-After, the
    /// right password too (so a refused attempt reveals nothing), for known and unknown users
    /// alike; other accounts are not affected until the client's own limit.
    @Test func failuresPerAccountAndPerAddressAreLimited() async throws {
        try await TestHerald.withHerald(configure: {
            $0.signInLimitPerAccountAndClient = .init(burst: 3, refillSeconds: 60)
            $0.signInLimitPerClient = .init(burst: 8, refillSeconds: 60)
        }) { herald in
            try await herald.application().test(.router) { client in
                _ = try await client.signUp("alice")
                _ = try await client.signUp("bob")
                for user in ["alice", "nobody"] {
                    for _ in 0..<3 {
                        #expect(try await Self.signIn(client, user, "wrong-password").status == .unauthorized)
                    }
                    let refused = try await Self.signIn(client, user, user == "alice" ? "password-123" : "wrong-password")
                    #expect(refused.status == .tooManyRequests)
                    #expect(Int(refused.headers[.retryAfter] ?? "") ?? 0 >= 1)
                    #expect(refused.body.string.contains("too many failed sign-ins"))
                }
                // HTTP Basic counts against the same limit.
                let basic = try await client.execute(uri: "/api/register", method: .post, headers: .basic("alice", "password-123"))
                #expect(basic.status == .tooManyRequests)
                // Bob is not locked out by Alice's attacker: one success resets his failures…
                #expect(try await Self.signIn(client, "bob", "wrong-password").status == .unauthorized)
                #expect(try await Self.signIn(client, "bob", "password-123").status == .ok)
                // …until the address has used its 8 failures (3 + 3 + 1 so far).
                #expect(try await Self.signIn(client, "carol", "wrong-password").status == .unauthorized)
                let address = try await Self.signIn(client, "dave", "wrong-password")
                #expect(address.status == .tooManyRequests)
            }
        }
    }
}
