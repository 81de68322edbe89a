import NIOCore
import NIOPosix
import NIOSSL
import Synchronization

/// One connection slot of an ``HTTP2Client``: the connection it currently sends over, the
/// requests waiting for it, and the older connections still finishing their streams.
///
/// Requests arrive from any thread into a locked inbox; the first request of a burst schedules
/// one task on the slot's event loop, which takes the whole inbox and hands it to the
/// connection (which writes it and flushes once). Everything else happens on that event loop,
/// driven by ``HTTP2ClientConnectionState``.
final class HTTP2ClientConnection: Sendable {
    /// What every slot of a client shares.
    struct Shared: Sendable {
        var configuration: HTTP2Client.Configuration
        var sslContext: NIOSSLContext?
        var serverHostname: String?
    }

    private struct Inbox {
        var requests: [HTTP2PendingRequest] = []
        var drainScheduled = false
        var isShutDown = false
    }

    /// State confined to the event loop (a class, so that reading it copies nothing).
    private final class LoopState {
        var machine: HTTP2ClientConnectionState
        /// The connection new requests go to.
        var current: HTTP2ClientHandler?
        /// Requests waiting for a connection attempt.
        var waiting: [HTTP2PendingRequest] = []
        /// An empty array with capacity, swapped with the inbox to take a burst.
        var spare: [HTTP2PendingRequest] = []
        /// Every open connection: the current one and those going away.
        var channels: [Int: any Channel] = [:]
        var connectsInFlight = 0
        var shutdownPromise: EventLoopPromise<Void>?

        init(machine: HTTP2ClientConnectionState) {
            self.machine = machine
        }
    }

    let eventLoop: any EventLoop
    private let shared: Shared
    private let inbox = Mutex(Inbox())
    private let state: NIOLoopBoundBox<LoopState>
    private let opened = Atomic<Int>(0)
    /// How many of this slot's connections are open now (``LoopState/channels``' count).
    private let open = Atomic<Int>(0)

    init(eventLoop: any EventLoop, shared: Shared) {
        self.eventLoop = eventLoop
        self.shared = shared
        let machine = HTTP2ClientConnectionState(
            initialBackoff: shared.configuration.initialReconnectBackoff,
            maximumBackoff: shared.configuration.maximumReconnectBackoff
        )
        self.state = .makeBoxSendingValue(LoopState(machine: machine), as: LoopState.self, eventLoop: eventLoop)
    }

    /// Connections this slot has set up.
    var connectionsOpened: Int { opened.load(ordering: .relaxed) }

    /// Connections of this slot open now: the current one and those going away.
    var openConnections: Int { open.load(ordering: .relaxed) }

    /// Queues `requests` for the event loop in one go; fails them at once after shutdown. Any
    /// thread.
    func enqueue(contentsOf requests: [HTTP2PendingRequest]) {
        let schedule: Bool? = inbox.withLock { inbox in
            if inbox.isShutDown { return nil }
            inbox.requests.append(contentsOf: requests)
            if inbox.drainScheduled { return false }
            inbox.drainScheduled = true
            return true
        }
        switch schedule {
        case nil:
            let error = HTTP2ClientError(.shutDown, "the HTTP/2 client is shut down")
            for request in requests { request.fail(error) }
        case true?:
            eventLoop.execute { self.drainInbox() }
        case false?:
            break
        }
    }

    /// Queues `request` for the event loop; fails it at once after shutdown. Any thread.
    func enqueue(_ request: HTTP2PendingRequest) {
        enqueue(contentsOf: [request])
    }

    /// Fails request `requestID` with ``HTTP2ClientError/Code/cancelled`` wherever it is: in the
    /// inbox, waiting for a connection, or on a stream (which is reset). Any thread.
    func cancel(requestID: Int) {
        let removed: HTTP2PendingRequest? = inbox.withLock { inbox in
            guard let index = inbox.requests.firstIndex(where: { $0.id == requestID }) else { return nil }
            return inbox.requests.remove(at: index)
        }
        if let removed {
            removed.fail(Self.cancelled)
            return
        }
        eventLoop.execute {
            let state = self.state.value
            if let index = state.waiting.firstIndex(where: { $0.id == requestID }) {
                state.waiting.remove(at: index).fail(Self.cancelled)
                return
            }
            for channel in state.channels.values {
                let handler = try? channel.pipeline.syncOperations.handler(type: HTTP2ClientHandler.self)
                if handler?.cancel(requestID: requestID, error: Self.cancelled) == true { return }
            }
        }
    }

    private static var cancelled: HTTP2ClientError { HTTP2ClientError(.cancelled, "the request was cancelled") }

    // MARK: - On the event loop

    private func drainInbox() {
        let state = self.state.value
        var batch: [HTTP2PendingRequest] = []
        swap(&batch, &state.spare)
        inbox.withLock { inbox in
            swap(&inbox.requests, &batch)
            inbox.drainScheduled = false
        }
        dispatch(batch)
        batch.removeAll(keepingCapacity: true)
        state.spare = batch
    }

    /// Sends, queues or fails `requests` as the slot's state says.
    private func dispatch(_ requests: [HTTP2PendingRequest]) {
        guard !requests.isEmpty else { return }
        let state = self.state.value
        switch state.machine.requestsArrived(now: .now()) {
        case .send:
            // A connection that cannot take them (going away) has detached itself already and
            // hands them back through `resubmit`.
            state.current!.submit(requests)
        case .queue:
            state.waiting.append(contentsOf: requests)
        case .connect(let id):
            state.waiting.append(contentsOf: requests)
            connect(id: id)
        case .failBackingOff:
            let error = HTTP2ClientError(
                .connectFailed, "\(peer) could not be reached recently; waiting before the next attempt")
            for request in requests { request.fail(error) }
        case .failShutDown:
            let error = HTTP2ClientError(.shutDown, "the HTTP/2 client is shut down")
            for request in requests { request.fail(error) }
        }
    }

    /// Requests a connection handed back because it stopped taking streams (after it reported
    /// ``connectionGoingAway(id:)`` or ``connectionClosed(id:error:)``).
    func resubmit(_ requests: [HTTP2PendingRequest]) {
        dispatch(requests)
    }

    private var peer: String { "\(shared.configuration.host):\(shared.configuration.port)" }

    private func connect(id: Int) {
        let shared = self.shared
        let configuration = shared.configuration
        let handlerConfiguration = HTTP2ClientHandler.Configuration(
            connectTimeout: configuration.connectTimeout,
            maxStreams: configuration.maxStreamsPerConnection,
            maxResponseBodySize: configuration.maxResponseBodySize,
            timeoutResolution: configuration.timeoutResolution,
            peer: peer
        )
        state.value.connectsInFlight += 1
        ClientBootstrap(group: eventLoop)
            .connectTimeout(configuration.connectTimeout)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    if let sslContext = shared.sslContext {
                        let tls = try NIOSSLClientHandler(context: sslContext, serverHostname: shared.serverHostname)
                        try sync.addHandler(tls)
                    }
                    try sync.addHandler(HTTP2ClientHandler(owner: self, connectionID: id, configuration: handlerConfiguration))
                }
            }
            .connect(host: configuration.host, port: configuration.port)
            .whenComplete { result in
                self.connectCompleted(id: id, result: result)
            }
    }

    private func connectCompleted(id: Int, result: Result<any Channel, any Error>) {
        let state = self.state.value
        state.connectsInFlight -= 1
        switch result {
        case .success(let channel):
            let handler = try? channel.pipeline.syncOperations.handler(type: HTTP2ClientHandler.self)
            guard let handler, channel.isActive else {
                // Closed already; the handler reported it.
                channel.close(promise: nil)
                finishShutdownIfDone()
                return
            }
            state.channels[id] = channel
            open.store(state.channels.count, ordering: .relaxed)
            // The connect callback runs before channelActive, and a channel closed that early
            // never reports channelInactive to its handler: its close future is what says for
            // certain that it is gone.
            channel.closeFuture.whenComplete { _ in self.channelClosed(id: id) }
            guard state.machine.connectSucceeded(id: id) else {
                // Shut down meanwhile: nothing was sent on it; its close completes the shutdown.
                channel.close(promise: nil)
                return
            }
            opened.wrappingAdd(1, ordering: .relaxed)
            state.current = handler
            let waiting = state.waiting
            state.waiting.removeAll(keepingCapacity: true)
            handler.submit(waiting)
        case .failure(let error):
            if state.machine.connectFailed(id: id, now: .now()) {
                failWaiting(HTTP2ClientError(.connectFailed, "cannot connect to \(peer): \(error)"))
            }
            finishShutdownIfDone()
        }
    }

    private func failWaiting(_ error: HTTP2ClientError) {
        let state = self.state.value
        let waiting = state.waiting
        state.waiting.removeAll(keepingCapacity: true)
        for request in waiting { request.fail(error) }
    }

    // MARK: - Events from the connections (on the event loop)

    /// The server's SETTINGS arrived on connection `id`.
    func connectionReady(id: Int) {
        state.value.machine.connectionReady(id: id)
    }

    /// Connection `id` takes no new streams.
    func connectionGoingAway(id: Int) {
        let state = self.state.value
        if state.machine.connectionGoingAway(id: id) == .detach {
            state.current = nil
        }
    }

    /// Connection `id` closed; `error` says why, for requests still waiting for it.
    func connectionClosed(id: Int, error: HTTP2ClientError) {
        let state = self.state.value
        state.channels.removeValue(forKey: id)
        open.store(state.channels.count, ordering: .relaxed)
        switch state.machine.connectionClosed(id: id, now: .now()) {
        case .detach:
            state.current = nil
        case .failQueued:
            failWaiting(error)
        case .none:
            break
        }
        finishShutdownIfDone()
    }

    /// Channel `id` is closed, whether or not its handler saw it become inactive.
    private func channelClosed(id: Int) {
        guard state.value.channels.removeValue(forKey: id) != nil else { return }
        open.store(state.value.channels.count, ordering: .relaxed)
        finishShutdownIfDone()
    }

    // MARK: - Shutdown

    /// Refuses new requests, fails those waiting for a connection, lets every connection finish
    /// its streams and close, and completes when all are closed.
    func shutdown() -> EventLoopFuture<Void> {
        inbox.withLock { $0.isShutDown = true }
        return eventLoop.flatSubmit {
            let state = self.state.value
            if let existing = state.shutdownPromise { return existing.futureResult }
            guard state.machine.shutDown() else { return self.eventLoop.makeSucceededVoidFuture() }
            let promise = self.eventLoop.makePromise(of: Void.self)
            state.shutdownPromise = promise
            state.current = nil
            // Requests that reached the inbox before the flag was set fail like those waiting.
            self.drainInbox()
            self.failWaiting(HTTP2ClientError(.shutDown, "the HTTP/2 client is shut down"))
            for channel in state.channels.values {
                if let handler = try? channel.pipeline.syncOperations.handler(type: HTTP2ClientHandler.self) {
                    handler.closeWhenIdle()
                } else {
                    channel.close(promise: nil)
                }
            }
            self.finishShutdownIfDone()
            return promise.futureResult
        }
    }

    private func finishShutdownIfDone() {
        let state = self.state.value
        guard let promise = state.shutdownPromise, state.channels.isEmpty, state.connectsInFlight == 0 else { return }
        state.shutdownPromise = nil
        promise.succeed()
    }
}
