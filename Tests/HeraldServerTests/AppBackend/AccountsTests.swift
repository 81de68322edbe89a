import Foundation
import HeraldServer
import Hummingbird
import HummingbirdTesting
import Testing

@Suite struct AccountsTests {
    @Test func signUpSignInAndUseTheToken() async throws {
        try await TestHerald.withHerald { herald in
            try await herald.application().test(.router) { client in
                let headers = try await client.signUp("Alice")
                // The name was lowercased; the token works on a guarded route.
                try await client.execute(uri: "/api/register", method: .post, headers: headers) { response in
                    #expect(response.status == .ok)
                }
                // Basic against the real account works too.
                try await client.execute(uri: "/api/register", method: .post, headers: .basic("alice", "password-123")) { response in
                    #expect(response.status == .ok)
                }
            }
        }
    }

    @Test func badCredentialsAreRefused() async throws {
        try await TestHerald.withHerald { herald in
            try await herald.application().test(.router) { client in
                _ = try await client.signUp("alice")
                try await client.execute(
                    uri: "/api/token", method: .post, body: .json(#"{"username":"alice","password":"wrong-password"}"#)
                ) { response in
                    #expect(response.status == .unauthorized)
                    #expect(response.body.string.contains("wrong user name or password"))
                }
                try await client.execute(uri: "/api/register", method: .post, headers: .basic("alice", "nope")) { response in
                    #expect(response.status == .unauthorized)
                }
                try await client.execute(uri: "/api/register", method: .post, headers: .bearer("hrd_forged")) { response in
                    #expect(response.status == .unauthorized)
                }
                try await client.execute(uri: "/api/register", method: .post) { response in
                    #expect(response.status == .unauthorized)
                    #expect(response.headers[.wwwAuthenticate] != nil)
                }
            }
        }
    }

    @Test func signUpValidatesItsInput() async throws {
        try await TestHerald.withHerald { herald in
            try await herald.application().test(.router) { client in
                _ = try await client.signUp("alice")
                let cases: [(String, HTTPResponse.Status, String)] = [
                    (#"{"username":"alice","password":"password-123"}"#, .conflict, "taken"),
                    (#"{"username":"bob","password":"short"}"#, .badRequest, "at least 8"),
                    (#"{"username":"bob smith","password":"password-123"}"#, .badRequest, "only letters"),
                    (#"{"username":"","password":"password-123"}"#, .badRequest, "1 to 64"),
                    (#"{"user":"bob"}"#, .badRequest, "username"),
                    ("not json", .badRequest, "not valid JSON"),
                ]
                for (body, status, message) in cases {
                    try await client.execute(uri: "/api/accounts", method: .post, body: .json(body)) { response in
                        #expect(response.status == status, "\(body)")
                        #expect(response.body.string.contains(message), "\(body): \(response.body.string)")
                    }
                }
            }
        }
    }

    @Test func demoAuthIsOffByDefault() async throws {
        try await TestHerald.withHerald { herald in
            try await herald.application().test(.router) { client in
                try await client.execute(uri: "/api/register", method: .post, headers: .basic("mallory", "mallory")) { response in
                    #expect(response.status == .unauthorized)
                }
            }
        }
    }

    @Test func demoAuthAcceptsUserEqualsPasswordWhenSwitchedOn() async throws {
        try await TestHerald.withHerald(configure: { $0.insecureDemoAuth = true }) { herald in
            try await herald.application().test(.router) { client in
                try await client.execute(uri: "/api/register", method: .post, headers: .basic("alice", "alice")) { response in
                    #expect(response.status == .ok)
                }
                try await client.execute(uri: "/api/register", method: .post, headers: .basic("alice", "bob")) { response in
                    #expect(response.status == .unauthorized)
                }
            }
        }
    }

    @Test func signOutRevokesTheToken() async throws {
        try await TestHerald.withHerald { herald in
            try await herald.application().test(.router) { client in
                let headers = try await client.signUp("alice")
                try await client.execute(uri: "/api/token", method: .delete, headers: headers) { response in
                    #expect(response.status == .noContent)
                }
                try await client.execute(uri: "/api/register", method: .post, headers: headers) { response in
                    #expect(response.status == .unauthorized)
                }
            }
        }
    }

    @Test func signUpCanBeDisabled() async throws {
        try await TestHerald.withHerald(configure: { $0.allowSignUp = false }) { herald in
            try await herald.application().test(.router) { client in
                try await client.execute(
                    uri: "/api/accounts", method: .post, body: .json(#"{"username":"bob","password":"password-123"}"#)
                ) { response in
                    #expect(response.status == .forbidden)
                }
            }
        }
    }
}
