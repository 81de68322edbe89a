import Foundation
import HTTPTypes
import HeraldCore
import HeraldHub
import HeraldServer
import HummingbirdTesting
import NIOCore
import NIOPosix
import Testing

/// The limits on anonymous and low-right callers, over real sockets from several loopback
/// addresses: sign-ups per client, the password-hashing pool's bounded queue, sign-in
/// failures per account and client, connections per client, and the hub API's rate per class
/// of key.
@Suite struct CallerLimitsTests {
    /// Runs `body` with a live Herald on port 0 (listening on `host`) and its port.
    static func live(
        host: String = "127.0.0.1",
        configure: @escaping (inout ServerConfiguration) -> Void,
        _ body: @escaping @Sendable (TestHerald, Int) async throws -> Void
    ) async throws {
        try await TestHerald.withHerald(configure: { server in
            server.host = host
            configure(&server)
        }) { herald in
            try await herald.application().test(.live) { client in
                try await body(herald, try #require(client.port))
            }
        }
    }

    static func credentials(_ user: String, _ password: String) -> String {
        #"{"username":"\#(user)","password":"\#(password)"}"#
    }

    /// Sign-ups are limited per client: a burst of twice the rate a minute, every attempt
    /// counting (a taken name too), then 429 with Retry-After as JSON; another client is not
    /// affected. On a dual-stack listener ("::") an IPv4 client arrives as an IPv4-mapped IPv6
    /// address and is still counted by its own IPv4 address, not with every IPv4 client in one
    /// "/64" of mapped addresses.
    @Test(arguments: ["127.0.0.1", "::"])
    func signUpsAreLimitedPerClient(host: String) async throws {
        try await Self.live(host: host, configure: { $0.signUpsPerMinute = 2 }) { _, port in
            let first = LoopbackClient(address: "127.0.0.2", port: port)
            #expect(try await first.post("/api/accounts", json: Self.credentials("alice", "password-123")).status == 201)
            #expect(try await first.post("/api/accounts", json: Self.credentials("alice", "password-123")).status == 409)
            #expect(try await first.post("/api/accounts", json: Self.credentials("bob", "password-123")).status == 201)
            #expect(try await first.post("/api/accounts", json: Self.credentials("carol", "password-123")).status == 201)
            let refused = try await first.post("/api/accounts", json: Self.credentials("dave", "password-123"))
            #expect(refused.status == 429, "\(refused)")
            #expect(Int(refused.headers["retry-after"] ?? "") ?? 0 >= 1)
            #expect(refused.headers["content-type"]?.hasPrefix("application/json") == true)
            #expect(refused.body.contains(#""code":"tooManyRequests""#) && refused.body.contains("too many sign-ups"))
            let second = LoopbackClient(address: "127.0.0.3", port: port)
            #expect(try await second.post("/api/accounts", json: Self.credentials("dave", "password-123")).status == 201)
        }
    }

    /// bcrypt runs on a pool of its own with a bounded queue: while the one thread hashes and
    /// no hash may wait, another sign-up (and a sign-in) gets 503 with Retry-After as JSON at
    /// once; a taken name still gets its 409, because the name is checked before anything is
    /// hashed.
    @Test func aFullHashingQueueAnswers503AndATakenNameCostsNoHash() async throws {
        try await Self.live(configure: {
            $0.bcryptCost = 13
            $0.passwordHashThreads = 1
            $0.passwordHashQueue = 0
        }) { _, port in
            let client = LoopbackClient(address: "127.0.0.1", port: port)
            #expect(try await client.post("/api/accounts", json: Self.credentials("alice", "password-123")).status == 201)
            let slow = Task { try await client.post("/api/accounts", json: Self.credentials("bob", "password-123")) }
            try await Task.sleep(for: .milliseconds(300))
            let taken = try await client.post("/api/accounts", json: Self.credentials("alice", "password-456"))
            #expect(taken.status == 409, "\(taken)")
            let busy = try await client.post("/api/accounts", json: Self.credentials("carol", "password-123"))
            #expect(busy.status == 503, "\(busy)")
            #expect(busy.headers["retry-after"] == "1")
            #expect(busy.body.contains(#""code":"unavailable""#) && busy.body.contains("busy checking passwords"))
            let signIn = try await client.post("/api/token", json: Self.credentials("alice", "password-123"))
            #expect(signIn.status == 503, "\(signIn)")
            #expect(try await slow.value.status == 201)
            #expect(try await client.post("/api/token", json: Self.credentials("alice", "password-123")).status == 200)
        }
    }

    /// Someone else's failures at an account do not lock its owner out: 11 wrong passwords
    /// from one address (the 11th refused), and the right one from another address signs in.
    @Test func failuresFromOneAddressDoNotLockTheOwnerOut() async throws {
        try await Self.live(configure: { _ in }) { _, port in
            let owner = LoopbackClient(address: "127.0.0.2", port: port)
            let guesser = LoopbackClient(address: "127.0.0.3", port: port)
            #expect(try await owner.post("/api/accounts", json: Self.credentials("alice", "password-123")).status == 201)
            for attempt in 1...11 {
                let answer = try await guesser.post("/api/token", json: Self.credentials("alice", "guess-\(attempt)"))
                #expect(answer.status == (attempt <= 10 ? 401 : 429), "attempt \(attempt): \(answer)")
            }
            #expect(try await guesser.post("/api/token", json: Self.credentials("alice", "password-123")).status == 429)
            let signedIn = try await owner.post("/api/token", json: Self.credentials("alice", "password-123"))
            #expect(signedIn.status == 200, "\(signedIn)")
        }
    }

    /// A guesser spread over many addresses meets the account's ceiling: then even the right
    /// password from a new address is refused, while the address the owner signed in from
    /// before still signs in.
    @Test func theAccountCeilingStopsAGuesserSpreadOverManyAddresses() async throws {
        try await Self.live(configure: {
            $0.signInLimitPerAccountAndClient = .init(burst: 2, refillSeconds: 60)
            $0.signInLimitPerAccount = .init(burst: 6, refillSeconds: 600)
        }) { _, port in
            let owner = LoopbackClient(address: "127.0.0.2", port: port)
            #expect(try await owner.post("/api/accounts", json: Self.credentials("alice", "password-123")).status == 201)
            #expect(try await owner.post("/api/token", json: Self.credentials("alice", "password-123")).status == 200)
            for host in 10..<13 {
                let guesser = LoopbackClient(address: "127.0.0.\(host)", port: port)
                for attempt in 0..<2 {
                    let answer = try await guesser.post("/api/token", json: Self.credentials("alice", "guess-\(host)-\(attempt)"))
                    #expect(answer.status == 401, "\(answer)")
                }
            }
            let fresh = LoopbackClient(address: "127.0.0.20", port: port)
            let refused = try await fresh.post("/api/token", json: Self.credentials("alice", "password-123"))
            #expect(refused.status == 429, "\(refused)")
            #expect(refused.body.contains("too many failed sign-ins"))
            #expect(try await owner.post("/api/token", json: Self.credentials("alice", "password-123")).status == 200)
        }
    }

    /// One client's connections are capped: with every one of its allowed connections busy
    /// (a body that never comes), its next connection gets 503, while another client's is
    /// served; a client at its cap with idle connections makes room among its own.
    @Test func connectionsAreCappedPerClient() async throws {
        try await Self.live(configure: { $0.connectionLimits.maximumConnectionsPerClient = 3 }) { _, port in
            let hog = LoopbackClient(address: "127.0.0.2", port: port)
            var stalled: [any Channel] = []
            for _ in 0..<3 { stalled.append(try await hog.stalledRequest()) }
            try await Task.sleep(for: .milliseconds(300))
            let refused = try await hog.request("GET", "/health")
            #expect(refused.status == 503, "\(refused)")
            #expect(refused.headers["retry-after"] == "1")
            #expect(refused.body.contains("Too many connections from your address"))
            let other = LoopbackClient(address: "127.0.0.3", port: port)
            #expect(try await other.request("GET", "/health").status == 200)

            // Idle connections of a client at its cap give way to its new one.
            let idle = LoopbackClient(address: "127.0.0.4", port: port)
            var quiet: [any Channel] = []
            for _ in 0..<3 {
                quiet.append(try await idle.idleConnection())
            }
            try await Task.sleep(for: .milliseconds(200))
            #expect(try await idle.request("GET", "/health").status == 200)

            for channel in stalled + quiet { try? await channel.close() }
        }
    }

    /// The hub API's rate is per hub and class of key: a flood with the Listen key (which ships
    /// in apps) uses up the Listen bucket, and a send with the full key still succeeds.
    @Test func theListenKeyCannotStarveSends() async throws {
        try await TestHerald.withHubAPIRouter(configure: { $0.hubRequestsPerSecond = 1 }) { definition, client in
            let hub = HubTestServer.hubName
            func header(_ path: String, rule: String) throws -> String {
                let rule = try #require(definition.rule(named: rule))
                return SDKSignature.dotNet.header(
                    url: "http://localhost/\(hub)/\(path)", hub: hub, keyName: rule.name, key: rule.primaryKey,
                    expiry: Int(Date().timeIntervalSince1970) + 3600
                )
            }
            let listen = try header("registrationids", rule: SharedAccessRule.defaultListenRuleName)
            var throttled = false
            for _ in 0..<50 {
                let response = try await client.executeRequest(
                    uri: "/\(hub)/registrationids?\(HubTestServer.apiVersion)", method: .post, headers: [.authorization: listen], body: nil
                )
                if response.status == .tooManyRequests {
                    throttled = true
                    break
                }
            }
            #expect(throttled, "the Listen key's requests were never throttled")
            let send = try await client.executeRequest(
                uri: "/\(hub)/messages?\(HubTestServer.apiVersion)", method: .post,
                headers: [
                    .authorization: try header("messages", rule: SharedAccessRule.defaultFullRuleName),
                    .contentType: "application/json;charset=utf-8",
                    HTTPField.Name("ServiceBusNotification-Format")!: "apple",
                ],
                body: ByteBuffer(string: #"{"aps":{"alert":"still here"}}"#)
            )
            #expect(send.status == .created, "\(send.status) \(String(buffer: send.body))")
        }
    }

    /// The key of a per-client limit: IPv4 whole, IPv4-mapped IPv6 as its IPv4 address, other
    /// IPv6 by its /64 (a host rotating through its /64 stays one client).
    @Test(arguments: [
        ("192.0.2.7", "192.0.2.7"),
        ("::ffff:192.0.2.7", "192.0.2.7"),
        ("2001:db8:1:2::1", "2001:db8:1:2::/64"),
        ("2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64"),
        ("2001:db8:1:3::1", "2001:db8:1:3::/64"),
        ("::1", "0:0:0:0::/64"),
    ])
    func clientKeys(address: String, key: String) throws {
        #expect(try SocketAddress(ipAddress: address, port: 443).clientKey == key)
    }
}
