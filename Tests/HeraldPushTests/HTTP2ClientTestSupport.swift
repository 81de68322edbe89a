import NIOCore
import NIOPosix
import Synchronization

#if canImport(Glibc)
import Glibc
private let streamSocket = Int32(SOCK_STREAM.rawValue)
#elseif canImport(Darwin)
import Darwin
private let streamSocket = SOCK_STREAM
#endif

/// Closes a file descriptor (the C function, which ``RefusingPort/close()`` shadows).
private func closeDescriptor(_ descriptor: Int32) {
    _ = close(descriptor)
}

/// A TCP relay on 127.0.0.1 between the client under test and a real server, which can hold
/// back the server's bytes (a server that stops answering) or cut every connection (a lost
/// network). Bytes are never altered, so TLS and HTTP/2 run end to end.
final class TCPRelay: Sendable {
    private struct State {
        var held = false
        /// Relayed pairs: (client side, server side).
        var pairs: [(inbound: any Channel, outbound: any Channel)] = []
        var accepted = 0
    }

    private final class Box: Sendable {
        let state: Mutex<State>
        init(held: Bool) { state = Mutex(State(held: held)) }
    }

    private let listener: any Channel
    private let box: Box
    let port: Int

    private init(listener: any Channel, box: Box) {
        self.listener = listener
        self.box = box
        self.port = listener.localAddress?.port ?? 0
    }

    /// Relays to `127.0.0.1:targetPort`. `held`: the server's bytes are held back from the start.
    static func start(targetPort: Int, held: Bool = false) async throws -> TCPRelay {
        let box = Box(held: held)
        let group = MultiThreadedEventLoopGroup.singleton
        let listener = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { inbound in
                let hold = box.state.withLock { state in
                    state.accepted += 1
                    return state.held
                }
                return ClientBootstrap(group: inbound.eventLoop)
                    .channelOption(.autoRead, value: !hold)
                    .connect(host: "127.0.0.1", port: targetPort)
                    .flatMapThrowing { outbound in
                        try inbound.pipeline.syncOperations.addHandler(Splice(partner: outbound))
                        try outbound.pipeline.syncOperations.addHandler(Splice(partner: inbound))
                        box.state.withLock { $0.pairs.append((inbound, outbound)) }
                    }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        return TCPRelay(listener: listener, box: box)
    }

    /// Connections accepted so far.
    var acceptedCount: Int { box.state.withLock { $0.accepted } }

    /// Stops reading from the server: its answers wait in the socket until ``release()``.
    func hold() async throws {
        let outbound = box.state.withLock { state in
            state.held = true
            return state.pairs.map(\.outbound)
        }
        for channel in outbound { try await channel.setOption(.autoRead, value: false).get() }
    }

    /// Reads from the server again.
    func release() async throws {
        let outbound = box.state.withLock { state in
            state.held = false
            return state.pairs.map(\.outbound)
        }
        for channel in outbound { try await channel.setOption(.autoRead, value: true).get() }
    }

    /// Closes every relayed connection, both sides, without any goodbye.
    func cutAll() async {
        let pairs = box.state.withLock { state in
            defer { state.pairs = [] }
            return state.pairs
        }
        for pair in pairs {
            try? await pair.inbound.close()
            try? await pair.outbound.close()
        }
    }

    func close() async {
        try? await listener.close()
        await cutAll()
    }

    /// Writes what one side reads to the other, and closes the other when one closes.
    private final class Splice: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        let partner: any Channel

        init(partner: any Channel) { self.partner = partner }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            partner.writeAndFlush(unwrapInboundIn(data), promise: nil)
        }

        func channelInactive(context: ChannelHandlerContext) {
            partner.close(promise: nil)
            context.fireChannelInactive()
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            context.close(promise: nil)
        }
    }
}

/// A count that tasks add to.
final class Tally: Sendable {
    private let value = Atomic<Int>(0)
    func add() { value.wrappingAdd(1, ordering: .relaxed) }
    var count: Int { value.load(ordering: .relaxed) }
}

/// A port on 127.0.0.1 that refuses connections for as long as this value is open: a TCP
/// socket bound to it that never listens. Holding the port keeps other tests, which bind
/// port 0 in the same process, from being given it (a port bound and closed at once could
/// be, and a test expecting a refusal would reach another test's server).
final class RefusingPort {
    private var descriptor: Int32
    let port: Int

    init() throws {
        let descriptor = socket(AF_INET, streamSocket, 0)
        guard descriptor >= 0 else { throw IOError(errnoCode: errno, reason: "socket") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(descriptor, address, length) == 0 && getsockname(descriptor, address, &length) == 0
            }
        }
        guard bound else {
            let code = errno
            closeDescriptor(descriptor)
            throw IOError(errnoCode: code, reason: "bind")
        }
        self.descriptor = descriptor
        self.port = Int(UInt16(bigEndian: address.sin_port))
    }

    func close() {
        guard descriptor >= 0 else { return }
        closeDescriptor(descriptor)
        descriptor = -1
    }

    deinit { close() }
}

/// A minimal cleartext HTTP/2 server speaking raw frames, for what the emulator cannot be told
/// to do: on its first connection it waits for `batch` requests, then sends GOAWAY naming
/// `lastProcessed` and answers only the streams up to it. Later connections answer every
/// request at once. Answers are `:status: 200` with no body.
final class GoAwayServer: Sendable {
    private let listener: any Channel
    private let connections = Atomic<Int>(0)
    let port: Int

    private init(listener: any Channel) {
        self.listener = listener
        self.port = listener.localAddress?.port ?? 0
    }

    static func start(batch: Int, lastProcessed: Int) async throws -> GoAwayServer {
        let counter = Counter()
        let listener = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                let first = counter.next() == 0
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        FrameHandler(batch: first ? batch : 1, lastProcessed: first ? Int32(lastProcessed) : Int32.max))
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        return GoAwayServer(listener: listener)
    }

    func close() async {
        try? await listener.close()
    }

    private final class Counter: Sendable {
        private let value = Atomic<Int>(0)
        func next() -> Int { value.wrappingAdd(1, ordering: .relaxed).oldValue }
    }

    private final class FrameHandler: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer

        private static let preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
        private let batch: Int
        private let lastProcessed: Int32
        private var buffer = ByteBuffer()
        private var sawPreface = false
        private var waiting: [Int32] = []
        private var wentAway = false

        init(batch: Int, lastProcessed: Int32) {
            self.batch = batch
            self.lastProcessed = lastProcessed
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var bytes = unwrapInboundIn(data)
            buffer.writeBuffer(&bytes)
            if !sawPreface {
                guard buffer.readableBytes >= 24 else { return }
                guard buffer.readString(length: 24) == Self.preface else {
                    context.close(promise: nil)
                    return
                }
                sawPreface = true
                writeFrame(context: context, type: 0x4, flags: 0, streamID: 0, payload: [])  // SETTINGS
            }
            while buffer.readableBytes >= 9, let length = buffer.getInteger(at: buffer.readerIndex, as: UInt32.self) {
                let payloadLength = Int(length >> 8)
                guard buffer.readableBytes >= 9 + payloadLength else { break }
                let type = buffer.getInteger(at: buffer.readerIndex + 3, as: UInt8.self)!
                let flags = buffer.getInteger(at: buffer.readerIndex + 4, as: UInt8.self)!
                let streamID = Int32(bitPattern: buffer.getInteger(at: buffer.readerIndex + 5, as: UInt32.self)! & 0x7fff_ffff)
                buffer.moveReaderIndex(forwardBy: 9 + payloadLength)
                switch type {
                case 0x4 where flags & 0x1 == 0:
                    writeFrame(context: context, type: 0x4, flags: 0x1, streamID: 0, payload: [])  // SETTINGS ACK
                case 0x1:
                    waiting.append(streamID)
                default:
                    break
                }
            }
            guard !wentAway, waiting.count >= batch else {
                context.flush()
                return
            }
            if lastProcessed != Int32.max {
                wentAway = true
                var goAway: [UInt8] = []
                withUnsafeBytes(of: lastProcessed.bigEndian) { goAway += $0 }
                goAway += [0, 0, 0, 0]  // NO_ERROR
                writeFrame(context: context, type: 0x7, flags: 0, streamID: 0, payload: goAway)
            }
            for streamID in waiting where streamID <= lastProcessed {
                // HEADERS, END_STREAM | END_HEADERS, HPACK static index 8 = ":status: 200".
                writeFrame(context: context, type: 0x1, flags: 0x5, streamID: streamID, payload: [0x88])
            }
            waiting = []
            context.flush()
        }

        private func writeFrame(context: ChannelHandlerContext, type: UInt8, flags: UInt8, streamID: Int32, payload: [UInt8]) {
            var frame = context.channel.allocator.buffer(capacity: 9 + payload.count)
            frame.writeInteger(UInt8(truncatingIfNeeded: payload.count >> 16))  // 24-bit length
            frame.writeInteger(UInt16(truncatingIfNeeded: payload.count))
            frame.writeInteger(type)
            frame.writeInteger(flags)
            frame.writeInteger(UInt32(bitPattern: streamID))
            frame.writeBytes(payload)
            context.write(wrapOutboundOut(frame), promise: nil)
        }
    }
}
