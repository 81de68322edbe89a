import Foundation
import HTTPTypes
import HeraldCore
import HeraldPush
import HeraldTLS
import Hummingbird
import HummingbirdTLS
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization
import Testing

/// An app backend's webhook endpoint, for the tests: a real HTTPS server on 127.0.0.1 (a
/// certificate of the test's CA) that keeps every request it gets and answers with the
/// statuses it is told to (2xx once those run out).
final class WebhookReceiver: Sendable {
    /// One request as it arrived.
    struct Received: Sendable {
        var id: String
        var timestamp: Int
        var signature: String
        var body: String
        var answered: Int

        var type: String? { (try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])?["type"] as? String }
        var data: [String: Any] {
            ((try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])?["data"] as? [String: Any]) ?? [:]
        }

        /// Whether one of its signatures verifies with `secret`.
        func isSigned(with secret: String) -> Bool {
            guard let secret = try? WebhookSecret(secret) else { return false }
            return WebhookSignature.verify(header: signature, id: id, timestamp: timestamp, body: body, secret: secret)
        }
    }

    private struct State {
        var received: [Received] = []
        /// The statuses to answer next, in order; 204 once empty.
        var script: [Int] = []
    }

    private let state = Mutex(State())
    let port: Int

    private init(port: Int) {
        self.port = port
    }

    var received: [Received] { state.withLock { $0.received } }

    /// Answers the next requests with `statuses`, in order.
    func answer(_ statuses: [Int]) {
        state.withLock { $0.script = statuses }
    }

    func url(_ path: String = "/events") -> String { "https://127.0.0.1:\(port)\(path)" }

    private func record(id: String, timestamp: Int, signature: String, body: String) -> Int {
        state.withLock { state in
            let status = state.script.isEmpty ? 204 : state.script.removeFirst()
            state.received.append(Received(id: id, timestamp: timestamp, signature: signature, body: body, answered: status))
            return status
        }
    }

    /// Runs a receiver with a certificate from `authority` for the duration of `body`.
    static func with<T: Sendable>(authority: CertificateAuthority, _ body: @Sendable (WebhookReceiver) async throws -> T) async throws -> T {
        var logger = Logger(label: "test.webhook-receiver")
        logger.logLevel = .warning
        let identity = try authority.issueServerIdentity(hosts: ["127.0.0.1"])
        let (ports, portContinuation) = AsyncStream<Int>.makeStream()
        let holder = Mutex<WebhookReceiver?>(nil)
        let router = Router()
        router.post("events") { request, _ -> Response in
            let bytes = try await request.body.collect(upTo: 1 << 20)
            let receiver = holder.withLock { $0 }
            let status =
                receiver?.record(
                    id: request.headers[HTTPField.Name("webhook-id")!] ?? "",
                    timestamp: Int(request.headers[HTTPField.Name("webhook-timestamp")!] ?? "") ?? 0,
                    signature: request.headers[HTTPField.Name("webhook-signature")!] ?? "",
                    body: String(buffer: bytes)
                ) ?? 500
            return Response(status: .init(code: status))
        }
        // A redirect, which the sender must not follow.
        router.post("moved") { _, _ -> Response in
            Response(status: .permanentRedirect, headers: [.location: "/events"])
        }
        let application = Application(
            router: router,
            server: try .tls(.http1(), tlsConfiguration: identity.makeServerConfiguration(applicationProtocols: ["http/1.1"])),
            configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in
                portContinuation.yield(channel.localAddress?.port ?? 0)
                portContinuation.finish()
            },
            logger: logger
        )
        let serviceGroup = ServiceGroup(configuration: .init(services: [application], logger: logger))
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await serviceGroup.run() }
            var iterator = ports.makeAsyncIterator()
            guard let port = await iterator.next(), port > 0 else {
                await serviceGroup.triggerGracefulShutdown()
                throw TestFailure("the webhook receiver did not start")
            }
            let receiver = WebhookReceiver(port: port)
            holder.withLock { $0 = receiver }
            let outcome: Result<T, any Error>
            do {
                outcome = .success(try await body(receiver))
            } catch {
                outcome = .failure(error)
            }
            await serviceGroup.triggerGracefulShutdown()
            try await group.waitForAll()
            return try outcome.get()
        }
    }
}
