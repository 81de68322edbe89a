import Crypto
import Foundation
import HeraldCore
import HeraldEmulator
import HeraldTLS
import HeraldTestSupport
import Logging
import NIOCore
import NIOHPACK
import Testing

@testable import HeraldPush

/// What the HTTP/2 client tests need around an ``APNsHarness``: client configurations for the
/// emulator (directly or through a relay) and signed APNs requests.
struct HTTP2Fixture {
    let harness: APNsHarness
    let authorization: String

    init(_ harness: APNsHarness) throws {
        self.harness = harness
        self.authorization = try APNsProviderToken.sign(
            teamID: harness.teamID, keyID: harness.keyID, key: harness.key, issuedAt: harness.clientClock.now, generation: 1
        ).authorization
    }

    func configuration(port: Int? = nil, connections: Int = 1) throws -> HTTP2Client.Configuration {
        var configuration = HTTP2Client.Configuration(host: "127.0.0.1", port: port ?? harness.emulator.port)
        configuration.trustRoots = [try harness.authority.sslCertificate]
        configuration.connections = connections
        // Not under test here: a busy machine may take longer than the default to set up TLS.
        configuration.connectTimeout = .seconds(60)
        return configuration
    }

    func request(_ device: String, text: String = "hi") -> HTTP2Client.Request {
        HTTP2Client.Request(
            path: "/3/device/" + device,
            headers: [("authorization", authorization), ("apns-topic", APNsHarness.topic), ("apns-push-type", "alert")],
            body: ByteBuffer(string: #"{"aps":{"alert":"\#(text)"}}"#)
        )
    }

    static let device = String(repeating: "0123456789abcdef", count: 4)

    /// Runs `body` against an emulator that accepts any well-formed device token.
    static func with(
        _ configure: (inout APNsEmulator.Configuration) -> Void = { _ in },
        _ body: (HTTP2Fixture) async throws -> Void
    ) async throws {
        try await APNsHarness.with({
            $0.openDeviceRegistry = true
            $0.recordsPayloads = false
            configure(&$0)
        }) { harness in
            try await body(try HTTP2Fixture(harness))
        }
    }
}

extension HTTP2Client {
    /// Sends `request` with a generous deadline; the error, if any, as a value.
    func result(_ request: Request, timeout: TimeAmount = .seconds(30)) async -> Result<Response, HTTP2ClientError> {
        do {
            return .success(try await send(request, deadline: .now() + timeout))
        } catch {
            return .failure(error)
        }
    }

    /// Sends `count` copies of `request` at once; the results in completion order.
    func results(_ request: Request, count: Int) async -> [Result<Response, HTTP2ClientError>] {
        await withTaskGroup(of: Result<Response, HTTP2ClientError>.self) { group in
            for _ in 0..<count { group.addTask { await self.result(request) } }
            return await group.reduce(into: []) { $0.append($1) }
        }
    }
}

extension Result<HTTP2Client.Response, HTTP2ClientError> {
    var status: Int? { (try? get())?.status }
    var errorCode: HTTP2ClientError.Code? {
        if case .failure(let error) = self { return error.code }
        return nil
    }
}

@Suite(.timeLimit(.minutes(2))) struct HTTP2ClientTests {
    @Test func manyConcurrentSendsShareFewConnections() async throws {
        try await HTTP2Fixture.with { fixture in
            let client = try HTTP2Client(configuration: try fixture.configuration(connections: 2))
            // Moderate on purpose: debug builds of NIOHTTP2 slow down badly with 1000 open streams
            // per connection, and the event loops are shared with the other suites.
            let results = await client.results(fixture.request(HTTP2Fixture.device), count: 600)
            #expect(results.count == 600)
            #expect(results.allSatisfy { $0.status == 200 })
            #expect(fixture.harness.emulator.acceptedCount == 600)
            // Lazily opened, one per slot, never more.
            #expect(client.connectionsOpened == 2)
            await client.shutdown()
        }
    }

    @Test func aBatchIsAnsweredInItsOrderOverTheConfiguredConnections() async throws {
        try await HTTP2Fixture.with { fixture in
            let client = try HTTP2Client(configuration: try fixture.configuration(connections: 2))
            let good = fixture.request(HTTP2Fixture.device)
            var batch = (0..<300).map { _ in
                var headers = client.headerBlock(path: good.path, reservingCapacity: good.headers.count)
                headers.add(contentsOf: good.headers)
                return HTTP2Client.BatchRequest(headers: headers, body: good.body)
            }
            // A path the emulator does not serve, in the middle: its own answer, in its place.
            batch[150] = HTTP2Client.BatchRequest(
                headers: client.headerBlock(method: "GET", path: "/nowhere", reservingCapacity: 0), body: nil)
            let answers = await client.send(batch: batch, deadline: .now() + .seconds(60))
            #expect(answers.map { $0.result.status } == (0..<300).map { $0 == 150 ? 404 : 200 })
            #expect(fixture.harness.emulator.acceptedCount == 299)
            #expect(client.connectionsOpened == 2)
            #expect(await client.send(batch: [], deadline: .now() + .seconds(1)).isEmpty)
            await client.shutdown()
        }
    }

    @Test func cancellingABatchFailsWhatIsNotAnswered() async throws {
        try await HTTP2Fixture.with { fixture in
            let relay = try await TCPRelay.start(targetPort: fixture.harness.emulator.port)
            let client = try HTTP2Client(configuration: try fixture.configuration(port: relay.port))
            try #require(await client.result(fixture.request(HTTP2Fixture.device)).status == 200)

            try await relay.hold()
            let request = fixture.request(HTTP2Fixture.device)
            let batch = (0..<20).map { _ in
                var headers = client.headerBlock(path: request.path, reservingCapacity: request.headers.count)
                headers.add(contentsOf: request.headers)
                return HTTP2Client.BatchRequest(headers: headers, body: request.body)
            }
            let task = Task { await client.send(batch: batch, deadline: .now() + .minutes(10)) }
            try await eventually("the emulator accepts the batch") { fixture.harness.emulator.acceptedCount >= 21 }
            task.cancel()
            let answers = await task.value
            #expect(answers.count == 20)
            #expect(answers.allSatisfy { $0.result.errorCode == .cancelled })
            try await relay.release()
            #expect(await client.result(fixture.request(HTTP2Fixture.device)).status == 200)
            await client.shutdown()
            await relay.close()
        }
    }

    @Test func responsesCarryStatusHeadersAndBody() async throws {
        try await HTTP2Fixture.with { fixture in
            let client = try HTTP2Client(configuration: try fixture.configuration())
            let ok = try await client.result(fixture.request(HTTP2Fixture.device)).get()
            #expect(ok.status == 200)
            #expect(ok.header("apns-id")?.count == 36)
            #expect(ok.body == nil)

            fixture.harness.emulator.injectFaults(Fault.throttled.withRetryAfter(7), count: 1)
            let throttled = try await client.result(fixture.request(HTTP2Fixture.device)).get()
            #expect(throttled.status == 429)
            #expect(throttled.header("retry-after") == "7")
            let body = try #require(throttled.body)
            #expect(String(buffer: body).contains(#""reason":"TooManyRequests""#))

            let notFound = try await client.result(HTTP2Client.Request(method: "GET", path: "/nowhere")).get()
            #expect(notFound.status == 404)
            await client.shutdown()
        }
    }

    @Test func streamLimitBelowTheConcurrencyQueuesRatherThanFails() async throws {
        try await HTTP2Fixture.with({ $0.maxConcurrentStreams = 3 }) { fixture in
            let client = try HTTP2Client(configuration: try fixture.configuration(connections: 1))
            let results = await client.results(fixture.request(HTTP2Fixture.device), count: 500)
            #expect(results.allSatisfy { $0.status == 200 })
            #expect(fixture.harness.emulator.acceptedCount == 500)
            #expect(client.connectionsOpened == 1)
            await client.shutdown()
        }
    }

    @Test func usedUpStreamIDsMoveSendsToAFreshConnection() async throws {
        try await HTTP2Fixture.with { fixture in
            var configuration = try fixture.configuration(connections: 1)
            configuration.maxStreamsPerConnection = 10
            let client = try HTTP2Client(configuration: configuration)
            for _ in 0..<25 {
                let first = await client.result(fixture.request(HTTP2Fixture.device))
                try #require(first.status == 200, "\(first)")
            }
            #expect(client.connectionsOpened == 3)
            // A burst larger than what is left on a connection spills over to the next ones.
            let results = await client.results(fixture.request(HTTP2Fixture.device), count: 100)
            #expect(results.allSatisfy { $0.status == 200 })
            #expect(fixture.harness.emulator.acceptedCount == 125)
            await client.shutdown()
        }
    }

    @Test func serverShutdownMidRunLosesNothingAndLaterSendsReconnect() async throws {
        try await HTTP2Fixture.with { fixture in
            let harness = fixture.harness
            var configuration = try fixture.configuration(connections: 2)
            configuration.initialReconnectBackoff = .milliseconds(20)
            configuration.maximumReconnectBackoff = .milliseconds(20)
            let client = try HTTP2Client(configuration: configuration)
            let first = await client.result(fixture.request(HTTP2Fixture.device))
            try #require(first.status == 200, "\(first)")

            // Sends keep coming while the emulator says GOAWAY and closes.
            let results = try await withThrowingTaskGroup(of: [Result<HTTP2Client.Response, HTTP2ClientError>].self) { group in
                for _ in 0..<40 {
                    group.addTask {
                        var results: [Result<HTTP2Client.Response, HTTP2ClientError>] = []
                        for _ in 0..<30 { results.append(await client.result(fixture.request(HTTP2Fixture.device))) }
                        return results
                    }
                }
                try await eventually("the emulator accepts 200 requests") { harness.emulator.acceptedCount >= 200 }
                try await harness.emulator.shutdown()
                return try await group.reduce(into: []) { $0 += $1 }
            }
            #expect(results.count == 1200)
            let delivered = results.filter { $0.status == 200 }.count
            // Every stream the server processed was answered; everything else failed retryably.
            #expect(delivered + 1 == harness.emulator.acceptedCount)
            #expect(delivered < 1200)
            for result in results where result.status != 200 {
                #expect([.goAway, .connectFailed, .connectionClosed, .streamReset].contains(result.errorCode))
            }

            // The same service comes back on the same port: sends reconnect and succeed.
            var restarted = APNsEmulator.Configuration(
                identity: try harness.authority.issueServerIdentity(hosts: ["127.0.0.1"]),
                signingKeys: [.init(keyID: harness.keyID, teamID: harness.teamID, publicKey: harness.key.publicKey)]
            )
            restarted.port = harness.emulator.port
            restarted.openDeviceRegistry = true
            let emulator = try await APNsEmulator.start(configuration: restarted, logger: Logger(label: "apns-emulator"))
            var status: Int?
            for _ in 0..<500 where status != 200 {
                status = await client.result(fixture.request(HTTP2Fixture.device)).status
                if status != 200 { try await Task.sleep(for: .milliseconds(10)) }
            }
            #expect(status == 200)
            // A connection whose attempt was still on its way to the old server when the new
            // one came up fails its waiting sends (retryably) and connects again: wait until
            // a burst over every connection goes through, then every send must.
            var bursts = 0
            while bursts < 200, await !client.results(fixture.request(HTTP2Fixture.device), count: 10).allSatisfy({ $0.status == 200 }) {
                bursts += 1
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(bursts < 200, "the connections never all came back")
            let again = await client.results(fixture.request(HTTP2Fixture.device), count: 100)
            #expect(again.allSatisfy { $0.status == 200 })
            #expect(client.connectionsOpened >= 3)
            await client.shutdown()
            try await emulator.shutdown()
        }
    }

    @Test func goAwayFailsOnlyTheStreamsAboveItsLastStreamIDAndTheConnectionIsReplaced() async throws {
        // Ten requests get streams 1, 3, … 19; the server processed those up to 9.
        let server = try await GoAwayServer.start(batch: 10, lastProcessed: 9)
        var configuration = HTTP2Client.Configuration(host: "127.0.0.1", port: server.port)
        configuration.usesTLS = false
        let client = try HTTP2Client(configuration: configuration)
        let request = HTTP2Client.Request(method: "GET", path: "/")
        let results = await client.results(request, count: 10)
        #expect(results.filter { $0.status == 200 }.count == 5)
        #expect(results.filter { $0.errorCode == .goAway }.count == 5)

        let next = await client.result(request)
        #expect(next.status == 200, "\(next)")
        #expect(client.connectionsOpened == 2)
        await client.shutdown()
        await server.close()
    }

    @Test func lostConnectionsFailInFlightSendsRetryablyAndAreReplaced() async throws {
        try await HTTP2Fixture.with { fixture in
            let relay = try await TCPRelay.start(targetPort: fixture.harness.emulator.port)
            let client = try HTTP2Client(configuration: try fixture.configuration(port: relay.port))
            let first = await client.result(fixture.request(HTTP2Fixture.device))
            try #require(first.status == 200, "\(first)")

            try await relay.hold()
            async let stuck = client.results(fixture.request(HTTP2Fixture.device), count: 20)
            try await eventually("the emulator accepts 21 requests") { fixture.harness.emulator.acceptedCount >= 21 }
            await relay.cutAll()
            let lost = await stuck
            #expect(lost.allSatisfy { $0.errorCode == .connectionClosed })

            try await relay.release()
            let replaced = await client.result(fixture.request(HTTP2Fixture.device))
            #expect(replaced.status == 200, "\(replaced)")
            #expect(client.connectionsOpened == 2)
            #expect(relay.acceptedCount == 2)
            await client.shutdown()
            await relay.close()
        }
    }

    @Test func aRefusedConnectionFailsAtOnceAndRetryably() async throws {
        let refusing = try RefusingPort()
        defer { refusing.close() }
        var configuration = HTTP2Client.Configuration(host: "127.0.0.1", port: refusing.port)
        configuration.initialReconnectBackoff = .seconds(60)
        let client = try HTTP2Client(configuration: configuration)
        let request = HTTP2Client.Request(path: "/3/device/00", headers: [], body: ByteBuffer(string: "{}"))
        // The deadline is far away: only a refusal that fails at once can pass this suite's time limit.
        let first = await client.result(request, timeout: .minutes(10))
        #expect(first.errorCode == .connectFailed)
        // During the backoff, sends fail without trying again.
        let second = await client.result(request, timeout: .minutes(10))
        #expect(second.errorCode == .connectFailed)
        #expect(client.connectionsOpened == 0)
        await client.shutdown()
    }

    @Test func aServerThatNeverAnswersTimesOut() async throws {
        try await HTTP2Fixture.with { fixture in
            // Nothing comes back: not even the TLS handshake completes.
            let silent = try await TCPRelay.start(targetPort: fixture.harness.emulator.port, held: true)
            let client = try HTTP2Client(configuration: try fixture.configuration(port: silent.port))
            let result = await client.result(fixture.request(HTTP2Fixture.device), timeout: .milliseconds(200))
            #expect(result.errorCode == .timeout)
            await client.shutdown()
            await silent.close()
        }
    }

    @Test func aConnectionWithoutSettingsInTimeFailsToConnect() async throws {
        try await HTTP2Fixture.with { fixture in
            let silent = try await TCPRelay.start(targetPort: fixture.harness.emulator.port, held: true)
            var configuration = try fixture.configuration(port: silent.port)
            // Long enough for the TCP connection, which the relay accepts, on a busy machine:
            // the limit that runs out is the one on TLS and SETTINGS.
            configuration.connectTimeout = .seconds(2)
            let client = try HTTP2Client(configuration: configuration)
            let result = await client.result(fixture.request(HTTP2Fixture.device), timeout: .seconds(30))
            #expect(result.errorCode == .connectFailed, "\(result)")
            if case .failure(let error) = result { #expect("\(error)".contains("no HTTP/2 SETTINGS within")) }
            await client.shutdown()
            await silent.close()
        }
    }

    @Test func aStreamPastItsDeadlineIsResetAndTheConnectionKeepsWorking() async throws {
        try await HTTP2Fixture.with { fixture in
            let relay = try await TCPRelay.start(targetPort: fixture.harness.emulator.port)
            let client = try HTTP2Client(configuration: try fixture.configuration(port: relay.port))
            let first = await client.result(fixture.request(HTTP2Fixture.device))
            try #require(first.status == 200, "\(first)")

            try await relay.hold()
            let late = await client.result(fixture.request(HTTP2Fixture.device), timeout: .milliseconds(200))
            #expect(late.errorCode == .timeout)
            try await relay.release()

            // The late answer is dropped; the same connection carries the next sends.
            let results = await client.results(fixture.request(HTTP2Fixture.device), count: 50)
            #expect(results.allSatisfy { $0.status == 200 })
            #expect(client.connectionsOpened == 1)
            #expect(relay.acceptedCount == 1)
            await client.shutdown()
            await relay.close()
        }
    }

    @Test func cancellingTheSendingTaskResetsItsStream() async throws {
        try await HTTP2Fixture.with { fixture in
            let relay = try await TCPRelay.start(targetPort: fixture.harness.emulator.port)
            let client = try HTTP2Client(configuration: try fixture.configuration(port: relay.port))
            let first = await client.result(fixture.request(HTTP2Fixture.device))
            try #require(first.status == 200, "\(first)")

            try await relay.hold()
            let task = Task { await client.result(fixture.request(HTTP2Fixture.device), timeout: .minutes(10)) }
            try await eventually("the emulator accepts 2 requests") { fixture.harness.emulator.acceptedCount >= 2 }
            task.cancel()
            #expect(await task.value.errorCode == .cancelled)
            try await relay.release()

            let next = await client.result(fixture.request(HTTP2Fixture.device))
            #expect(next.status == 200, "\(next)")
            #expect(client.connectionsOpened == 1)

            // A task cancelled before it sends never reaches the server.
            let cancelled = Task {
                withUnsafeCurrentTask { $0?.cancel() }
                return await client.result(fixture.request(HTTP2Fixture.device))
            }
            #expect(await cancelled.value.errorCode == .cancelled)
            #expect(fixture.harness.emulator.acceptedCount == 3)
            await client.shutdown()
            await relay.close()
        }
    }

    @Test func cancellingASendWaitingForItsConnectionFailsIt() async throws {
        try await HTTP2Fixture.with { fixture in
            let silent = try await TCPRelay.start(targetPort: fixture.harness.emulator.port, held: true)
            let client = try HTTP2Client(configuration: try fixture.configuration(port: silent.port))
            let task = Task { await client.result(fixture.request(HTTP2Fixture.device), timeout: .seconds(20)) }
            try await eventually("the relay accepts a connection") { silent.acceptedCount >= 1 }
            task.cancel()
            #expect(await task.value.errorCode == .cancelled)
            await client.shutdown()
            await silent.close()
        }
    }

    /// A client shut down while its connection is being set up finishes shutting down. (The
    /// connect callback runs before channelActive, and a channel closed there never reports
    /// channelInactive; shutdown used to wait for that report forever.) Many clients make the
    /// race likely; each shutdown runs in a task of its own, so a stuck one fails the test
    /// instead of hanging it.
    @Test func shutdownDuringConnectionSetupCompletes() async throws {
        try await HTTP2Fixture.with { fixture in
            let silent = try await TCPRelay.start(targetPort: fixture.harness.emulator.port, held: true)
            let clients = 40
            let finished = Tally()
            for _ in 0..<clients {
                let client = try HTTP2Client(configuration: try fixture.configuration(port: silent.port))
                let request = fixture.request(HTTP2Fixture.device)
                Task {
                    async let sent = client.result(request, timeout: .seconds(20))
                    await Task.yield()
                    await client.shutdown()
                    _ = await sent
                    finished.add()
                }
            }
            try await eventually("every client finishes shutting down", within: .seconds(60)) {
                finished.count == clients
            }
            await silent.close()
        }
    }

    @Test func shutdownLetsStreamsInFlightFinish() async throws {
        try await HTTP2Fixture.with { fixture in
            let relay = try await TCPRelay.start(targetPort: fixture.harness.emulator.port)
            let client = try HTTP2Client(configuration: try fixture.configuration(port: relay.port))
            let first = await client.result(fixture.request(HTTP2Fixture.device))
            try #require(first.status == 200, "\(first)")

            // Twenty streams are in flight (answered, but the answers are held) when shutdown begins.
            try await relay.hold()
            async let inFlight = client.results(fixture.request(HTTP2Fixture.device), count: 20)
            try await eventually("the emulator accepts 21 requests") { fixture.harness.emulator.acceptedCount >= 21 }
            async let closed: Void = client.shutdown()
            try await eventually("the client is shut down", every: .milliseconds(1)) { client.isShutDown }
            let refused = await client.result(fixture.request(HTTP2Fixture.device))
            #expect(refused.errorCode == .shutDown)
            try await relay.release()
            let finished = await inFlight
            await closed
            #expect(finished.count == 20)
            #expect(finished.allSatisfy { $0.status == 200 })
            await relay.close()
        }
    }

    @Test func anUntrustedServerIsNotReached() async throws {
        try await HTTP2Fixture.with { fixture in
            var configuration = try fixture.configuration()
            configuration.trustRoots = [try CertificateAuthority.makeEphemeral().sslCertificate]
            let client = try HTTP2Client(configuration: configuration)
            let result = await client.result(fixture.request(HTTP2Fixture.device))
            #expect(result.errorCode == .connectFailed)
            #expect(fixture.harness.emulator.acceptedCount == 0)
            await client.shutdown()
        }
    }

    @Test func theServerNameIsVerified() async throws {
        let authority = try CertificateAuthority.makeEphemeral()
        let key = P256.Signing.PrivateKey()
        let emulator = try await APNsEmulator.start(
            configuration: .init(
                identity: try authority.issueServerIdentity(hosts: ["push.example.org"]),
                signingKeys: [.init(keyID: "K", teamID: "T", publicKey: key.publicKey)]),
            logger: Logger(label: "apns-emulator"))
        var configuration = HTTP2Client.Configuration(host: "localhost", port: emulator.port)
        configuration.trustRoots = [try authority.sslCertificate]
        let client = try HTTP2Client(configuration: configuration)
        let result = await client.result(HTTP2Client.Request(method: "GET", path: "/"))
        #expect(result.errorCode == .connectFailed)
        await client.shutdown()
        try await emulator.shutdown()
    }

    @Test func theProviderReportsARefusedConnectionAsUnreachableAtOnce() async throws {
        let refusing = try RefusingPort()
        defer { refusing.close() }
        try await APNsHarness.with { harness in
            var configuration = try harness.configuration(connections: 1)
            configuration.endpoint = "https://127.0.0.1:\(refusing.port)"
            // Only a refusal that fails at once can pass this suite's time limit.
            configuration.timeout = .seconds(600)
            try await harness.withProvider(configuration) { provider in
                for _ in 0..<3 {
                    let result = await provider.send(try alert("x"), to: PushTarget(handle: HTTP2Fixture.device))
                    #expect(result.disposition == .retryable(retryAfter: nil))
                    #expect(result.outcome == .pnsUnreachable)
                    #expect(result.status == nil)
                }
            }
        }
    }
}
