import AsyncHTTPClient
import Foundation
import HeraldClient
import HeraldCore
import HeraldHub
import HeraldServer
import HeraldTLS
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import NIOHTTP1
import NIOSSL
import Synchronization
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A live Herald serving the hub REST API on two listeners: plain HTTP, and TLS with a
/// certificate from a CA generated for the test. Its hub ``hubName`` lives in a catalog in
/// the ``TestHerald``'s temporary directory and delivers through that Herald's providers,
/// to its APNs, FCM, WNS and Web Push emulators.
struct HubTestServer: Sendable {
    static let hubName = "testhub"

    let herald: TestHerald
    let catalog: HubCatalog
    let registry: HubRegistry
    let definition: HubDefinition
    let authority: CertificateAuthority
    let httpPort: Int
    let tlsPort: Int
    /// An HTTP client that trusts ``authority``: the TLS transport of hub clients.
    let httpClient: HTTPClient

    /// How a hub client reaches the server.
    enum Route: String, Sendable, CustomTestStringConvertible {
        /// `URLSession` on the plain listener (`URLSession` on Linux cannot trust the test CA).
        case urlSession
        /// AsyncHTTPClient over TLS, trusting the generated CA.
        case tls

        var testDescription: String { rawValue }
    }

    /// Starts a ``TestHerald`` with the hub API, runs `body`, and stops everything.
    static func withServer<T: Sendable>(
        configureHubs: (inout HubEngine.Configuration) -> Void = { _ in },
        _ body: @Sendable (HubTestServer) async throws -> T
    ) async throws -> T {
        try await TestHerald.withHerald(configureHubs: configureHubs) { herald in
            var logger = Logger(label: "test.hub")
            logger.logLevel = .warning
            let catalog = herald.catalog
            let definition = try await catalog.create(name: hubName)
            let registry = herald.registry

            let authority = try CertificateAuthority.makeEphemeral()
            let identity = try authority.issueServerIdentity(hosts: ["127.0.0.1", "localhost"])
            var configuration = herald.server
            configuration.tlsPort = 0
            let (tlsPorts, tlsPortContinuation) = AsyncStream<Int>.makeStream()
            let tlsApplication = try buildTLSApplication(
                hubs: registry,
                devices: herald.devices,
                appStore: herald.store,
                configuration: configuration,
                tls: identity.makeServerConfiguration(applicationProtocols: ["http/1.1"]),
                onServerRunning: { port in
                    tlsPortContinuation.yield(port)
                    tlsPortContinuation.finish()
                },
                logger: logger
            )
            let application = buildApplication(
                hubs: registry, devices: herald.devices, appStore: herald.store, configuration: configuration,
                services: [tlsApplication], logger: logger
            )
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.trustRoots = .certificates([try authority.sslCertificate])
            let httpClient = HTTPClient(configuration: HTTPClient.Configuration(tlsConfiguration: tls))
            // The body's error is carried out as a value: an error thrown through the live test
            // cancels the server instead of shutting it down gracefully, and the hub registry
            // then cannot close its stores.
            let outcome: Result<T, any Error>
            do {
                outcome = try await application.test(.live) { client in
                    var ports = tlsPorts.makeAsyncIterator()
                    guard let tlsPort = await ports.next(), let httpPort = client.port else {
                        return .failure(TestFailure("the hub API's listeners did not start"))
                    }
                    let server = HubTestServer(
                        herald: herald, catalog: catalog, registry: registry, definition: definition, authority: authority,
                        httpPort: httpPort, tlsPort: tlsPort, httpClient: httpClient
                    )
                    let result: Result<T, any Error>
                    do {
                        result = .success(try await body(server))
                    } catch {
                        result = .failure(error)
                    }
                    // The client goes first: it closes its pooled connections itself, so the
                    // server's graceful shutdown has none left open.
                    try? await httpClient.shutdown()
                    return result
                }
            } catch {
                // A client dropped without shutdown is a fatal error in debug builds.
                try? await httpClient.shutdown()
                throw error
            }
            return try outcome.get()
        }
    }

    /// The connection string of `rule` (the full-access one by default) for a route:
    /// `Endpoint=sb://127.0.0.1:{tls}/` over TLS, `Endpoint=http://127.0.0.1:{http}/` otherwise.
    func connectionString(
        _ route: Route = .tls,
        rule: String = SharedAccessRule.defaultFullRuleName,
        key: SharedAccessRule.KeySlot = .primary
    ) -> String {
        let endpoint = route == .tls ? "sb://127.0.0.1:\(tlsPort)/" : "http://127.0.0.1:\(httpPort)/"
        let strings = catalog.connectionStrings(of: definition, endpoint: endpoint, key: key)
        return strings.first { $0.rule == rule }?.connectionString ?? strings[0].connectionString
    }

    /// A hub client for `route`, signing with `rule`'s key.
    func client(_ route: Route, rule: String = SharedAccessRule.defaultFullRuleName) throws -> NotificationHubClient {
        try client(route, connectionString: connectionString(route, rule: rule))
    }

    /// A hub client for `route` with any connection string (a wrong key, another hub…).
    func client(_ route: Route, connectionString: String) throws -> NotificationHubClient {
        switch route {
        case .urlSession:
            return try NotificationHubClient(connectionString: connectionString, hubName: Self.hubName)
        case .tls:
            return try NotificationHubClient(
                connectionString: connectionString, hubName: Self.hubName, transport: AsyncHTTPClientTransport(client: httpClient)
            )
        }
    }

    /// The hub's engine, as the server runs it.
    func engine() async throws -> HubEngine {
        guard let engine = try await registry.engine(named: Self.hubName) else { throw TestFailure("the test hub is missing") }
        return engine
    }
}

/// A ``NotificationHubTransport`` over AsyncHTTPClient: a real HTTP client, over real TLS,
/// that can trust a private CA (which `URLSession` on Linux cannot).
struct AsyncHTTPClientTransport: NotificationHubTransport {
    let client: HTTPClient

    func perform(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        guard let url = request.url else { throw TestFailure("a request without a URL") }
        var outgoing = HTTPClientRequest(url: url.absoluteString)
        outgoing.method = NIOHTTP1.HTTPMethod(rawValue: request.httpMethod ?? "GET")
        for (name, value) in request.allHTTPHeaderFields ?? [:] { outgoing.headers.add(name: name, value: value) }
        if let body = request.httpBody { outgoing.body = .bytes(ByteBuffer(bytes: body)) }
        let response = try await client.execute(outgoing, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 16 * 1024 * 1024)
        var fields: [String: String] = [:]
        for header in response.headers {
            fields[header.name] = fields[header.name].map { "\($0), \(header.value)" } ?? header.value
        }
        guard let http = HTTPURLResponse(url: url, statusCode: Int(response.status.code), httpVersion: "HTTP/1.1", headerFields: fields) else {
            throw TestFailure("cannot represent the answer as an HTTPURLResponse")
        }
        return (Data(body.readableBytesView), http)
    }
}
