import NIOCore
import NIOEmbedded
import Testing

@testable import HeraldPush

/// The gate between `NIOHTTP2Handler` and TLS: the writes between two flushes leave as one
/// buffer (so TLS seals one record for a burst, not one per frame), in order, and each write's
/// promise completes with the write it became part of.
@Suite struct HTTP2FlushGateTests {
    func channel() throws -> (EmbeddedChannel, HTTP2FlushGate) {
        let gate = HTTP2FlushGate()
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(gate)
        return (channel, gate)
    }

    func bytes(_ text: String) -> ByteBuffer { ByteBuffer(string: text) }

    /// How a promise of the embedded channel ended, `nil` while it has not (never waited for:
    /// the embedded loop runs nothing on its own).
    func outcome(_ promise: EventLoopPromise<Void>) -> Result<Void, any Error>? {
        var outcome: Result<Void, any Error>?
        promise.futureResult.assumeIsolated().whenComplete { outcome = $0 }
        return outcome
    }

    func succeeded(_ promise: EventLoopPromise<Void>) -> Bool {
        if case .success = outcome(promise) { return true }
        return false
    }

    func failed(_ promise: EventLoopPromise<Void>) -> Bool {
        if case .failure = outcome(promise) { return true }
        return false
    }

    @Test func theWritesBetweenTwoFlushesLeaveAsOneBufferInOrder() throws {
        let (channel, _) = try channel()
        let first = channel.eventLoop.makePromise(of: Void.self)
        let third = channel.eventLoop.makePromise(of: Void.self)
        channel.write(bytes("HEADERS;"), promise: first)
        channel.write(bytes("DATA-HEADER;"), promise: nil)
        channel.write(bytes("body"), promise: third)
        #expect(try channel.readOutbound(as: ByteBuffer.self) == nil)

        channel.flush()
        #expect(try channel.readOutbound(as: ByteBuffer.self) == bytes("HEADERS;DATA-HEADER;body"))
        #expect(try channel.readOutbound(as: ByteBuffer.self) == nil)
        #expect(succeeded(first))
        #expect(succeeded(third))

        // The next burst starts empty, in the storage of the last.
        channel.write(bytes("again"), promise: nil)
        channel.write(bytes("!"), promise: nil)
        channel.flush()
        #expect(try channel.readOutbound(as: ByteBuffer.self) == bytes("again!"))
        #expect(try channel.finish().isClean)
    }

    @Test func aBurstWithItsFlushesHeldLeavesAtItsEnd() throws {
        let (channel, gate) = try channel()
        gate.coalescing {
            for index in 1...3 {
                channel.write(bytes("request \(index);"), promise: nil)
                channel.flush()
            }
            #expect((try? channel.readOutbound(as: ByteBuffer.self)) == .some(nil))
        }
        #expect(try channel.readOutbound(as: ByteBuffer.self) == bytes("request 1;request 2;request 3;"))
        #expect(try channel.readOutbound(as: ByteBuffer.self) == nil)
        #expect(try channel.finish().isClean)
    }

    @Test func aFailedWriteFailsEveryWriteGatheredIntoIt() throws {
        let (channel, _) = try channel()
        try channel.pipeline.syncOperations.addHandler(FailingWrites(), position: .first)
        let promises = (0..<3).map { _ in channel.eventLoop.makePromise(of: Void.self) }
        for (index, promise) in promises.enumerated() {
            channel.write(bytes("frame \(index)"), promise: promise)
        }
        channel.flush()
        #expect(promises.allSatisfy(failed))
        _ = try channel.finish()
    }

    @Test func writesNotYetFlushedAreHandedOnWhenTheChannelCloses() throws {
        let (channel, _) = try channel()
        try channel.pipeline.syncOperations.addHandler(FailingWrites(), position: .first)
        let written = channel.eventLoop.makePromise(of: Void.self)
        channel.write(bytes("GOAWAY"), promise: written)
        #expect(!succeeded(written) && !failed(written))
        channel.close(promise: nil)
        channel.embeddedEventLoop.run()
        // Handed on, the write meets what comes after the gate, as it would without it, rather
        // than waiting for a flush that will not come.
        #expect(failed(written))
    }
}

/// Fails every write it sees, as a socket that is gone would.
private final class FailingWrites: ChannelOutboundHandler {
    typealias OutboundIn = IOData

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        promise?.fail(ChannelError.ioOnClosedChannel)
    }
}
