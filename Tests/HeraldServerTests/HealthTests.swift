import Foundation
import HTTPTypes
import HeraldCore
import HeraldHub
import HeraldServer
import HeraldStore
import Hummingbird
import HummingbirdTesting
import Testing

/// `/health` says the process answers; `/ready` says whether it can work, and what is wrong
/// when it cannot. Every response carries a request id.
@Suite struct HealthTests {
    static let metricsToken = "metrics-token-0123456789"
    static let withToken: HTTPFields = [.authorization: "Bearer \(metricsToken)"]

    /// The app backend's OpenAPI contract is served as it is embedded, to anyone, and names
    /// every route of the app backend (schemathesis tests the answers against it:
    /// `OpenAPIContractCommandTests`).
    @Test func theContractIsServedAndNamesEveryRouteOfTheAppBackend() async throws {
        try await TestHerald.withHerald { herald in
            try await herald.application().test(.router) { client in
                try await client.execute(uri: "/openapi.json", method: .get) { response in
                    #expect(response.status == .ok)
                    #expect(response.headers[.contentType] == "application/json; charset=utf-8")
                    let document = try #require(try JSONSerialization.jsonObject(with: Data(String(buffer: response.body).utf8)) as? [String: Any])
                    #expect(document["openapi"] as? String == "3.1.0")
                    let paths = try #require(document["paths"] as? [String: [String: Any]])
                    let routes: [(String, String)] = [
                        ("/api/accounts", "post"), ("/api/token", "post"), ("/api/token", "delete"), ("/api/register", "post"),
                        ("/api/register/{id}", "put"), ("/api/register/{id}", "delete"), ("/api/notifications", "post"),
                        ("/api/notifications/secure", "post"), ("/api/notifications/rich", "post"),
                        ("/api/notifications/liveactivity", "post"), ("/api/notifications/{id}", "get"), ("/api/rich", "post"),
                        ("/api/rich/{id}", "get"), ("/api/receipts", "post"), ("/health", "get"),
                    ]
                    for (path, method) in routes { #expect(paths[path]?[method] != nil, "\(method) \(path)") }
                }
            }
        }
    }

    @Test func readyListsTheOpenHubsAndThePlatformsToTheMetricsTokenOnly() async throws {
        try await TestHerald.withHerald(configure: { $0.metricsToken = Self.metricsToken }) { herald in
            try await herald.application().test(.router) { client in
                try await client.execute(uri: "/health", method: .get) { response in
                    #expect(response.status == .ok)
                }
                // Anyone: the status, and nothing of the hubs' names, stores or providers.
                for headers: HTTPFields in [[:], [.authorization: "Bearer wrong"]] {
                    try await client.execute(uri: "/ready", method: .get, headers: headers) { response in
                        #expect(response.status == .ok)
                        #expect(String(buffer: response.body) == #"{"status":"ready"}"#)
                    }
                }
                try await client.execute(uri: "/ready", method: .get, headers: Self.withToken) { response in
                    #expect(response.status == .ok)
                    let readiness = try JSONDecoder().decode(Readiness.self, from: Data(response.body.readableBytesView))
                    #expect(readiness.status == "ready")
                    #expect(readiness.problems.isEmpty)
                    #expect(readiness.hubs == [TestHerald.appHubName: "ok"])
                    #expect(readiness.platforms == [.apns, .fcm, .wns, .webpush])
                    #expect(readiness.providers == ["apns": "ok", "fcm": "ok", "wns": "ok", "webpush": "ok"])
                }
            }
        }
    }

    @Test func aStoreThatDoesNotAnswerMakesTheServerUnready() async throws {
        try await TestHerald.withHerald(configure: { $0.metricsToken = Self.metricsToken }) { herald in
            try await herald.application().test(.router) { client in
                try await herald.appHubEngine.store.close()
                try await client.execute(uri: "/ready", method: .get) { response in
                    #expect(response.status == .serviceUnavailable)
                    #expect(String(buffer: response.body) == #"{"status":"unready"}"#)
                }
                try await client.execute(uri: "/ready", method: .get, headers: Self.withToken) { response in
                    #expect(response.status == .serviceUnavailable)
                    let readiness = try JSONDecoder().decode(Readiness.self, from: Data(response.body.readableBytesView))
                    #expect(readiness.status == "unready")
                    #expect(readiness.problems.count == 1)
                    #expect(readiness.problems.first?.hasPrefix("hub \(TestHerald.appHubName): the store does not answer") == true)
                }
                // Liveness is another question: the process still answers.
                try await client.execute(uri: "/health", method: .get) { response in
                    #expect(response.status == .ok)
                }
            }
        }
    }

    @Test func everyResponseCarriesARequestIDAndAPlainOneFromTheCallerIsKept() async throws {
        try await TestHerald.withHerald { herald in
            try await herald.application().test(.router) { client in
                var first: String?
                try await client.execute(uri: "/health", method: .get) { response in
                    first = response.headers[.requestID]
                    #expect(first?.count == 32)
                }
                try await client.execute(uri: "/health", method: .get) { response in
                    #expect(response.headers[.requestID] != nil)
                    #expect(response.headers[.requestID] != first, "each request has its own")
                }
                try await client.execute(uri: "/health", method: .get, headers: [.requestID: "lb-7f3a.42"]) { response in
                    #expect(response.headers[.requestID] == "lb-7f3a.42")
                }
                // Not a plain token: replaced, so that nothing odd reaches the logs.
                try await client.execute(uri: "/health", method: .get, headers: [.requestID: "a b\u{7f}"]) { response in
                    #expect(response.headers[.requestID]?.count == 32)
                }
                // Errors carry it too.
                try await client.execute(uri: "/api/register", method: .post) { response in
                    #expect(response.status == .unauthorized)
                    #expect(response.headers[.requestID]?.count == 32)
                }
            }
        }
    }

    /// Each check pings every store: a flood of `/ready` costs one check a second (here: one a
    /// minute, so that a slow machine cannot make the check expire between two calls). That a
    /// check ends is shown by ``StorageFullTests``, which waits out the default second.
    @Test func readinessIsCheckedAtMostOncePerMaximumAge() async throws {
        try await TestHerald.withHerald(configure: { $0.readinessMaximumAge = .seconds(60) }) { herald in
            try await herald.application().test(.router) { client in
                try await client.execute(uri: "/ready", method: .get) { response in
                    #expect(response.status == .ok)
                }
                try await herald.appHubEngine.store.close()
                // Within the minute: the check just made, although the store is closed now.
                try await client.execute(uri: "/ready", method: .get) { response in
                    #expect(response.status == .ok)
                }
            }
        }
    }
}
