package import HeraldTLS
package import NIOCore
package import NIOHPACK
import NIOPosix
package import NIOSSL
import Synchronization

/// A lean HTTP/2 client for one origin: a fixed number of connections, requests spread over
/// them round-robin, streams handled frame by frame.
///
/// Built for push-service fan-out, where a general HTTP/2 stack's per-stream state and
/// separately flushed writes cost more than the requests themselves:
///
/// - Requests from any thread are queued per connection and handed to its event loop in
///   bursts; each burst's frames (HEADERS, DATA with END_STREAM) are written into one buffer
///   and leave in one write and one flush.
/// - The HTTP/2 framing is the client's own: ``HTTP2ClientHandler`` sits right above TLS,
///   encodes and decodes frames (``HTTP2FrameEncoder``, ``HTTP2FrameDecoder``; HPACK from
///   swift-nio-http2), allocates stream ids, keeps streams beyond the server's
///   SETTINGS_MAX_CONCURRENT_STREAMS until others close, respects its flow-control windows,
///   answers PING and SETTINGS, and completes one continuation per stream.
/// - Connections open on first use (TLS with ALPN `h2`, SNI and hostname verification) and are
///   replaced after a GOAWAY or a loss. A connection that cannot be set up fails its requests at
///   once, and further requests fail at once during a short, growing backoff.
/// - A GOAWAY fails the streams the server did not process (retryable, ``HTTP2ClientError/Code/goAway``);
///   the streams it did process finish on the old connection.
///
/// The client never retries: every failure is an ``HTTP2ClientError`` for the caller to classify.
/// Cancelling the sending task fails the request with ``HTTP2ClientError/Code/cancelled`` and
/// resets its stream (a cancellation that races with the request's hand-over to the event loop
/// may be missed; the deadline still bounds it).
/// Call ``shutdown()`` when done.
package final class HTTP2Client: Sendable {
    package struct Configuration: Sendable {
        /// Host name or IP address to connect to; also the `:authority` and the TLS server name.
        package var host: String
        package var port: Int
        /// TLS (ALPN `h2`, the host name for SNI and verification); `false` speaks cleartext
        /// HTTP/2 with prior knowledge.
        package var usesTLS = true
        /// Certificates to trust; `nil` uses the system roots.
        package var trustRoots: [NIOSSLCertificate]? = nil
        /// The certificate chain and key presented to the server (TLS client authentication);
        /// `nil` presents none.
        package var clientIdentity: TLSIdentity? = nil
        /// Number of connections that requests are spread over, round-robin.
        package var connections: Int = 1
        /// Time allowed to set a connection up: TCP connect, and again TLS plus the server's SETTINGS.
        package var connectTimeout: TimeAmount = .seconds(10)
        /// The wait after a failed connection attempt, doubling with each consecutive failure
        /// up to ``maximumReconnectBackoff``. Requests during the wait fail at once.
        package var initialReconnectBackoff: TimeAmount = .milliseconds(100)
        package var maximumReconnectBackoff: TimeAmount = .seconds(5)
        /// Streams opened on one connection before it is replaced; at most 2³⁰, what the client's
        /// stream id space holds.
        package var maxStreamsPerConnection: Int = 1 << 30
        /// Larger response bodies reset the stream and fail the request with ``HTTP2ClientError/Code/invalidResponse``.
        package var maxResponseBodySize: Int = 16 * 1024
        /// How often deadlines are checked while requests are in flight.
        package var timeoutResolution: TimeAmount = .milliseconds(50)
        /// The event loops connections run on; `nil` uses NIO's shared singleton group.
        package var eventLoopGroup: (any EventLoopGroup)? = nil

        package init(host: String, port: Int) {
            self.host = host
            self.port = port
        }
    }

    /// A request; ``HTTP2Client`` adds the pseudo-header fields.
    struct Request: Sendable {
        var method: String
        var path: String
        /// Regular header fields, names in lowercase.
        var headers: HPACKHeaders
        var body: ByteBuffer?

        init(method: String = "POST", path: String, headers: HPACKHeaders = [:], body: ByteBuffer? = nil) {
            self.method = method
            self.path = path
            self.headers = headers
            self.body = body
        }

        init(method: String = "POST", path: String, headers: [(String, String)], body: ByteBuffer? = nil) {
            self.init(method: method, path: path, headers: HPACKHeaders(headers), body: body)
        }
    }

    package struct Response: Sendable {
        package var status: Int
        /// The response header fields, `:status` included.
        package var headers: HPACKHeaders
        /// The body, `nil` if there was none.
        package var body: ByteBuffer?

        /// The first value of a header field; `name` in lowercase.
        package func header(_ name: String) -> String? { headers.first(name: name) }
    }

    let configuration: Configuration
    private let slots: [HTTP2ClientConnection]
    private let counter = Atomic<Int>(0)
    private let isShutdown = Atomic<Bool>(false)
    private let scheme: String
    private let authority: String

    /// - Throws: NIOSSL's error when the trust roots cannot be turned into a TLS context.
    package init(configuration: Configuration) throws {
        var configuration = configuration
        configuration.connections = max(1, configuration.connections)
        configuration.maxStreamsPerConnection = min(max(1, configuration.maxStreamsPerConnection), 1 << 30)
        self.configuration = configuration
        let shared: HTTP2ClientConnection.Shared
        if configuration.usesTLS {
            var tls = TLSConfiguration.makeClientConfiguration()
            if let trustRoots = configuration.trustRoots { tls.trustRoots = .certificates(trustRoots) }
            if let identity = configuration.clientIdentity {
                tls.certificateChain = identity.certificateChain.map { .certificate($0) }
                tls.privateKey = .privateKey(identity.privateKey)
            }
            tls.applicationProtocols = ["h2"]
            let context = try NIOSSLContext(configuration: tls)
            // SNI carries host names only; for an IP address NIOSSL verifies the certificate
            // against the connected address instead.
            let serverName = Self.isIPAddress(configuration.host) ? nil : configuration.host
            shared = .init(configuration: configuration, sslContext: context, serverHostname: serverName)
            scheme = "https"
        } else {
            shared = .init(configuration: configuration, sslContext: nil, serverHostname: nil)
            scheme = "http"
        }
        let host = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
        let defaultPort = configuration.usesTLS ? 443 : 80
        authority = configuration.port == defaultPort ? host : "\(host):\(configuration.port)"
        let group = configuration.eventLoopGroup ?? MultiThreadedEventLoopGroup.singleton
        slots = (0..<configuration.connections).map { _ in
            HTTP2ClientConnection(eventLoop: group.next(), shared: shared)
        }
    }

    /// Sends `request` and waits for the whole response or until `deadline`.
    func send(_ request: Request, deadline: NIODeadline) async throws(HTTP2ClientError) -> Response {
        var headers = headerBlock(method: request.method, path: request.path, reservingCapacity: request.headers.count)
        headers.add(contentsOf: request.headers)
        return try await send(headerBlock: headers, body: request.body, deadline: deadline)
    }

    /// The pseudo-header fields of a request to `path` on this client's origin, with room for
    /// `capacity` more: a caller that builds a request's header block itself appends its
    /// fields (names in lowercase) and sends it with ``send(headerBlock:body:deadline:)``, so
    /// that the block is built once and never copied.
    ///
    /// `:path` is not added to HPACK's dynamic table unless `indexingPath`: a path that names
    /// one device (APNs) would push out the fields that repeat on every request of the
    /// connection (authority, authorization, topic), which are then sent as an index of a byte
    /// or two each. A path that every request shares (FCM's `messages:send`) is one of those.
    package func headerBlock(
        method: String = "POST", path: String, indexingPath: Bool = false, reservingCapacity capacity: Int
    ) -> HPACKHeaders {
        var headers = HPACKHeaders()
        headers.reserveCapacity(capacity + 4)
        headers.add(name: ":method", value: method)
        headers.add(name: ":scheme", value: scheme)
        headers.add(name: ":authority", value: authority)
        headers.add(name: ":path", value: path, indexing: indexingPath ? .indexable : .nonIndexable)
        return headers
    }

    /// Sends a complete header block (from ``headerBlock(method:path:indexingPath:reservingCapacity:)``,
    /// pseudo-header fields first) and `body`, and waits for the whole response or until
    /// `deadline`. The block is sent as it is, unchecked: every block this client sends was built
    /// here.
    package func send(
        headerBlock headers: HPACKHeaders, body: ByteBuffer?, deadline: NIODeadline
    ) async throws(HTTP2ClientError)
        -> Response
    {
        let (slot, id) = nextSlot()
        guard !Task.isCancelled else { throw HTTP2ClientError(.cancelled, "the request was cancelled") }
        let result = await withTaskCancellationHandler {
            await withUnsafeContinuation { continuation in
                slot.enqueue(
                    HTTP2PendingRequest(
                        id: id, headers: headers, body: body, deadline: deadline, completion: .caller(continuation)))
                // A cancellation that came before the request was enqueued found nothing to
                // cancel; one that comes after this check runs `onCancel`, which finds it.
                if Task.isCancelled { slot.cancel(requestID: id) }
            }
        } onCancel: {
            slot.cancel(requestID: id)
        }
        return try result.get()
    }

    /// A request of a batch: a complete header block (from
    /// ``headerBlock(method:path:reservingCapacity:)``) and its body.
    package struct BatchRequest: Sendable {
        package var headers: HPACKHeaders
        package var body: ByteBuffer?

        package init(headers: HPACKHeaders, body: ByteBuffer?) {
            self.headers = headers
            self.body = body
        }
    }

    /// An answer of a batch: the response or why there is none, and when it came (for
    /// latency metrics).
    package struct BatchAnswer: Sendable {
        package var result: Result<Response, HTTP2ClientError>
        package var completedAt: ContinuousClock.Instant
    }

    /// Sends every request of `batch` and waits until each is answered or has failed (each
    /// within `deadline`); the answers come in the order of `batch`.
    ///
    /// The requests are spread round-robin over the connections as single sends are, and
    /// handed to each connection in one burst. The caller waits once for the whole batch, not
    /// once per request: for a fan-out, that saves a task and a wake-up per device. Cancelling
    /// the waiting task fails the requests not yet answered with
    /// ``HTTP2ClientError/Code/cancelled``.
    package func send(batch: [BatchRequest], deadline: NIODeadline) async -> [BatchAnswer] {
        guard !batch.isEmpty else { return [] }
        let first = counter.wrappingAdd(batch.count, ordering: .relaxed).oldValue
        guard !Task.isCancelled else {
            let error = HTTP2ClientError(.cancelled, "the request was cancelled")
            return batch.map { _ in BatchAnswer(result: .failure(error), completedAt: .now) }
        }
        let slots = self.slots
        return await withTaskCancellationHandler {
            await withUnsafeContinuation { continuation in
                let collector = HTTP2Batch(count: batch.count, continuation: continuation)
                var perSlot = [[HTTP2PendingRequest]](repeating: [], count: slots.count)
                for (offset, request) in batch.enumerated() {
                    let id = first &+ offset
                    perSlot[Self.slotIndex(of: id, among: slots.count)].append(
                        HTTP2PendingRequest(
                            id: id, headers: request.headers, body: request.body, deadline: deadline,
                            completion: .batch(collector, index: offset)))
                }
                for (slot, requests) in zip(slots, perSlot) where !requests.isEmpty {
                    slot.enqueue(contentsOf: requests)
                }
                // As for a single send: a cancellation before the enqueue found nothing.
                if Task.isCancelled { Self.cancel(batchOf: batch.count, from: first, in: slots) }
            }
        } onCancel: {
            Self.cancel(batchOf: batch.count, from: first, in: slots)
        }
    }

    private static func cancel(batchOf count: Int, from first: Int, in slots: [HTTP2ClientConnection]) {
        for offset in 0..<count {
            let id = first &+ offset
            slots[slotIndex(of: id, among: slots.count)].cancel(requestID: id)
        }
    }

    /// Sends a request with `headers` (lowercase names) and `body`.
    package func send(
        method: String = "POST",
        path: String,
        headers: HPACKHeaders,
        body: ByteBuffer?,
        deadline: NIODeadline
    ) async throws(HTTP2ClientError) -> Response {
        try await send(Request(method: method, path: path, headers: headers, body: body), deadline: deadline)
    }

    /// The next slot, round-robin, and an id for the request (unique within this client).
    private func nextSlot() -> (HTTP2ClientConnection, Int) {
        let n = counter.wrappingAdd(1, ordering: .relaxed).oldValue
        return (slots[Self.slotIndex(of: n, among: slots.count)], n)
    }

    /// The slot of request `id`: ids are handed out in order, so the slots take turns.
    private static func slotIndex(of id: Int, among count: Int) -> Int {
        Int(UInt(bitPattern: id) % UInt(count))
    }

    var isShutDown: Bool { isShutdown.load(ordering: .acquiring) }

    /// Connections opened so far (set up far enough to carry requests), over all slots.
    var connectionsOpened: Int { slots.reduce(0) { $0 + $1.connectionsOpened } }

    /// Connections open now, over every slot.
    var openConnections: Int { slots.reduce(0) { $0 + $1.openConnections } }

    /// Stops taking requests, lets the streams in flight finish (each within its deadline),
    /// closes every connection and returns when they are closed. Requests still waiting for
    /// a connection fail with ``HTTP2ClientError/Code/shutDown``. Later calls return at once.
    package func shutdown() async {
        guard !isShutdown.exchange(true, ordering: .acquiringAndReleasing) else { return }
        for slot in slots {
            try? await slot.shutdown().get()
        }
    }

    static func isIPAddress(_ host: String) -> Bool {
        (try? SocketAddress(ipAddress: host, port: 0)) != nil
    }
}

/// A request on its way to a stream, and who waits for its answer.
struct HTTP2PendingRequest: Sendable {
    /// Identifies the request for cancellation.
    var id: Int
    /// The complete header block, pseudo-header fields first.
    var headers: HPACKHeaders
    var body: ByteBuffer?
    var deadline: NIODeadline
    var completion: HTTP2Completion

    func fail(_ error: HTTP2ClientError) {
        completion.complete(.failure(error))
    }
}

/// Who waits for a request's answer: one caller's continuation, or a place in a batch.
enum HTTP2Completion: Sendable {
    case caller(UnsafeContinuation<Result<HTTP2Client.Response, HTTP2ClientError>, Never>)
    case batch(HTTP2Batch, index: Int)

    /// Hands over the answer; called once, on an event loop (or any thread for a request
    /// failed before it reached one).
    func complete(_ result: Result<HTTP2Client.Response, HTTP2ClientError>) {
        switch self {
        case .caller(let continuation):
            continuation.resume(returning: result)
        case .batch(let batch, let index):
            batch.complete(index, with: result)
        }
    }
}

/// The answers of one batch: each request's answer goes to its own place, and the last one
/// resumes the waiting caller with them all.
///
/// Answers arrive on the event loops of several connections, each for a different index, and
/// each exactly once; the countdown's acquire-release order makes every earlier write visible
/// to the one that resumes the caller.
final class HTTP2Batch: @unchecked Sendable {
    private let answers: UnsafeMutableBufferPointer<HTTP2Client.BatchAnswer?>
    private let remaining: Atomic<Int>
    private let continuation: UnsafeContinuation<[HTTP2Client.BatchAnswer], Never>

    init(count: Int, continuation: UnsafeContinuation<[HTTP2Client.BatchAnswer], Never>) {
        answers = .allocate(capacity: count)
        answers.initialize(repeating: nil)
        remaining = Atomic(count)
        self.continuation = continuation
    }

    deinit {
        answers.deinitialize()
        answers.deallocate()
    }

    func complete(_ index: Int, with result: Result<HTTP2Client.Response, HTTP2ClientError>) {
        answers[index] = HTTP2Client.BatchAnswer(result: result, completedAt: .now)
        guard remaining.wrappingSubtract(1, ordering: .acquiringAndReleasing).newValue == 0 else { return }
        continuation.resume(returning: answers.map { $0! })
    }
}
