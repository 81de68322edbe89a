import AsyncHTTPClient
public import Foundation
public import HeraldCore
import NIOCore
import NIOHTTP1
public import NIOSSL
public import ServiceLifecycle
import Synchronization

/// Posts signed events to webhook endpoints: one HTTP client for every hub of the node,
/// redirects not followed (a 3xx answer is a failure), every attempt bounded by a timeout,
/// and each URL's host checked against the allow-list before anything is sent.
///
/// `https` only, unless the operator names hosts that may be reached over plain `http`
/// (``Configuration/plainHTTPHosts``): a receiver on the same machine or in a private network,
/// for development and tests. Both lists are checked again at every attempt, so narrowing
/// them stops sends at once.
public final class WebhookPoster: Service, Sendable {
    public struct Configuration: Sendable {
        /// The hosts an endpoint URL may name. Every host by default.
        public var allowedHosts: HostAllowList = .anyHost
        /// The hosts an `http` endpoint URL may name: none by default.
        public var plainHTTPHosts: HostAllowList = []
        /// The most one attempt may take, from connecting to the end of the answer.
        public var timeout: Duration = .seconds(10)
        public var connectTimeout: Duration = .seconds(5)
        /// The certificates that the endpoints' TLS certificates are checked against: the
        /// system's when `nil`.
        public var trustRoots: [NIOSSLCertificate]? = nil

        public init() {}
    }

    /// What one attempt came to.
    public struct Result: Sendable, Hashable {
        /// The status the endpoint answered; `nil` when it did not answer.
        public var statusCode: Int?
        /// Why the attempt failed, when it failed: safe to log and show (no secret, no body).
        public var error: String?
        public var duration: Duration

        public var delivered: Bool { statusCode.map { (200..<300).contains($0) } ?? false }

        public init(statusCode: Int?, error: String?, duration: Duration) {
            self.statusCode = statusCode
            self.error = error
            self.duration = duration
        }
    }

    public let configuration: Configuration
    private let client: HTTPClient
    private let isShutdown = Atomic<Bool>(false)

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        var tls = TLSConfiguration.makeClientConfiguration()
        if let trustRoots = configuration.trustRoots { tls.trustRoots = .certificates(trustRoots) }
        var client = HTTPClient.Configuration(tlsConfiguration: tls)
        client.redirectConfiguration = .disallow
        client.decompression = .disabled
        client.timeout = .init(connect: .connectionSetup(configuration.connectTimeout, within: configuration.timeout))
        self.client = HTTPClient(configuration: client)
    }

    /// Why events may not be posted to `url` (its scheme or host is not allowed), or `nil`.
    public func refusal(of url: URL) -> String? {
        guard let scheme = url.scheme?.lowercased(), let host = url.host, !host.isEmpty else {
            return "the webhook URL is not an absolute http(s) URL"
        }
        switch scheme {
        case "https":
            return configuration.allowedHosts.allows(host: host) ? nil : "the host '\(host)' is not an allowed webhook host"
        case "http":
            return configuration.plainHTTPHosts.allows(host: host)
                ? nil : "plain http is not allowed for the host '\(host)' (use https, or allow it with the plain-http hosts option)"
        default:
            return "a webhook URL is https"
        }
    }

    /// Posts `body` under the event id `id` with its Standard Webhooks headers, signed with
    /// each of `secrets`, at `now`.
    public func post(to url: URL, id: String, body: String, secrets: [WebhookSecret], now: Date) async -> Result {
        let start = ContinuousClock.now
        if let refusal = refusal(of: url) { return Result(statusCode: nil, error: refusal, duration: .zero) }
        let timestamp = Int(now.timeIntervalSince1970.rounded(.down))
        var request = HTTPClientRequest(url: url.absoluteString)
        request.method = .POST
        request.headers.add(name: "content-type", value: "application/json")
        request.headers.add(name: "user-agent", value: "Herald-Webhooks")
        request.headers.add(name: "webhook-id", value: id)
        request.headers.add(name: "webhook-timestamp", value: "\(timestamp)")
        request.headers.add(name: "webhook-signature", value: WebhookSignature.header(id: id, timestamp: timestamp, body: body, secrets: secrets))
        request.body = .bytes(ByteBuffer(string: body))
        do {
            let response = try await client.execute(request, timeout: .init(configuration.timeout))
            // The answer's body is read (up to 64 KiB) and dropped: only the status counts.
            _ = try? await response.body.collect(upTo: 64 * 1024)
            let status = Int(response.status.code)
            let error = (200..<300).contains(status) ? nil : Self.describe(status: status)
            return Result(statusCode: status, error: error, duration: ContinuousClock.now - start)
        } catch {
            return Result(statusCode: nil, error: Self.describe(error), duration: ContinuousClock.now - start)
        }
    }

    /// Runs until graceful shutdown, then shuts the client down: start it before the hubs
    /// that post through it, so that it stops after them.
    public func run() async throws {
        try? await gracefulShutdown()
        try await shutdown()
    }

    /// Shuts the client down; later calls do nothing.
    public func shutdown() async throws {
        guard !isShutdown.exchange(true, ordering: .acquiringAndReleasing) else { return }
        try await client.shutdown()
    }

    private static func describe(status: Int) -> String {
        (300..<400).contains(status) ? "the endpoint answered \(status), a redirect, which is not followed" : "the endpoint answered \(status)"
    }

    /// A short reason for a failed attempt: the kind of failure, never a URL's query or a secret.
    private static func describe(_ error: any Error) -> String {
        if let error = error as? HTTPClientError {
            let timeouts: [HTTPClientError] = [.deadlineExceeded, .readTimeout, .connectTimeout]
            return timeouts.contains(error) ? "no answer within the timeout" : "the request failed: \(error)"
        }
        if error is NIOSSLError || error is BoringSSLError { return "TLS failed: \(error)" }
        return "the request failed: \(error)"
    }
}
