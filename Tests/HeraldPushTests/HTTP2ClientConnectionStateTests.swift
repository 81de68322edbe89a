import NIOCore
import Testing

@testable import HeraldPush

@Suite struct HTTP2ClientConnectionStateTests {
    static let start = NIODeadline.uptimeNanoseconds(1_000_000_000)

    func machine() -> HTTP2ClientConnectionState {
        HTTP2ClientConnectionState(initialBackoff: .milliseconds(100), maximumBackoff: .seconds(1))
    }

    @Test func connectsLazilyAndQueuesUntilConnected() {
        var state = machine()
        #expect(state.state == .idle)
        #expect(state.requestsArrived(now: Self.start) == .connect(id: 1))
        #expect(state.requestsArrived(now: Self.start) == .queue)
        #expect(state.connectSucceeded(id: 1) == true)
        #expect(state.state == .connected(id: 1, ready: false))
        #expect(state.requestsArrived(now: Self.start) == .send)
        state.connectionReady(id: 1)
        #expect(state.state == .connected(id: 1, ready: true))
        #expect(state.requestsArrived(now: Self.start) == .send)
    }

    @Test func failedAttemptsFailFastDuringADoublingBackoff() {
        var state = machine()
        #expect(state.requestsArrived(now: Self.start) == .connect(id: 1))
        #expect(state.connectFailed(id: 1, now: Self.start) == true)
        #expect(state.consecutiveFailures == 1)
        #expect(state.requestsArrived(now: Self.start + .milliseconds(99)) == .failBackingOff)
        #expect(state.requestsArrived(now: Self.start + .milliseconds(100)) == .connect(id: 2))

        // A connection that closes before the server's SETTINGS is a failed attempt too.
        #expect(state.connectSucceeded(id: 2) == true)
        #expect(state.connectionClosed(id: 2, now: Self.start) == .detach)
        #expect(state.consecutiveFailures == 2)
        #expect(state.requestsArrived(now: Self.start + .milliseconds(199)) == .failBackingOff)
        #expect(state.requestsArrived(now: Self.start + .milliseconds(200)) == .connect(id: 3))

        // Once a connection is ready the count starts over.
        #expect(state.connectSucceeded(id: 3) == true)
        state.connectionReady(id: 3)
        #expect(state.consecutiveFailures == 0)
    }

    @Test func backoffDoublesUpToTheMaximum() {
        let state = machine()
        #expect(state.backoff(afterFailures: 1) == .milliseconds(100))
        #expect(state.backoff(afterFailures: 2) == .milliseconds(200))
        #expect(state.backoff(afterFailures: 4) == .milliseconds(800))
        #expect(state.backoff(afterFailures: 5) == .seconds(1))
        #expect(state.backoff(afterFailures: 500) == .seconds(1))
    }

    @Test func aLostReadyConnectionIsReplacedAtOnce() {
        var state = machine()
        _ = state.requestsArrived(now: Self.start)
        _ = state.connectSucceeded(id: 1)
        state.connectionReady(id: 1)
        #expect(state.connectionClosed(id: 1, now: Self.start) == .detach)
        #expect(state.state == .idle)
        #expect(state.requestsArrived(now: Self.start) == .connect(id: 2))
    }

    @Test func goingAwayDetachesAndLaterEventsOfThatConnectionAreIgnored() {
        var state = machine()
        _ = state.requestsArrived(now: Self.start)
        _ = state.connectSucceeded(id: 1)
        state.connectionReady(id: 1)
        #expect(state.connectionGoingAway(id: 1) == .detach)
        #expect(state.requestsArrived(now: Self.start) == .connect(id: 2))
        // The old connection finishes its streams and closes while the new one connects.
        #expect(state.connectionClosed(id: 1, now: Self.start) == .none)
        #expect(state.connectionGoingAway(id: 1) == .none)
        state.connectionReady(id: 1)
        #expect(state.state == .connecting(id: 2))
        #expect(state.consecutiveFailures == 0)
    }

    @Test func aConnectionClosedBeforeItsConnectCallbackFailsTheQueue() {
        var state = machine()
        _ = state.requestsArrived(now: Self.start)
        #expect(state.connectionClosed(id: 1, now: Self.start) == .failQueued)
        #expect(state.connectSucceeded(id: 1) == false)
        #expect(state.connectFailed(id: 1, now: Self.start) == false)
        #expect(state.requestsArrived(now: Self.start) == .failBackingOff)
    }

    @Test func shutdownRefusesRequestsAndLateConnections() {
        var state = machine()
        _ = state.requestsArrived(now: Self.start)
        #expect(state.shutDown() == true)
        #expect(state.shutDown() == false)
        #expect(state.connectSucceeded(id: 1) == false)
        #expect(state.requestsArrived(now: Self.start) == .failShutDown)
    }
}
