import Foundation
import HeraldCore
import HeraldEmulator
import NIOCore
import Testing

@testable import HeraldPush

/// Broadcast channels from the provider, against the emulator's management port: create with
/// a storage policy, list, read, delete, with APNs' refusals as `HeraldError`s; one broadcast
/// request reaches every activity listening on the channel.
@Suite(.timeLimit(.minutes(2))) struct APNsBroadcastProviderTests {
    func configuration(_ harness: APNsHarness) throws -> APNsConfiguration {
        var configuration = try harness.configuration(connections: 1)
        configuration.broadcastManagementEndpoint = try #require(harness.emulator.broadcastBaseURL)
        return configuration
    }

    @Test func channelsAreCreatedListedReadAndDeleted() async throws {
        try await APNsHarness.with { harness in
            try await harness.withProvider(try configuration(harness)) { provider in
                let stored = try await provider.createChannel(messageStoragePolicy: 1)
                let unstored = try await provider.createChannel(messageStoragePolicy: 0)
                #expect(Data(base64Encoded: stored) != nil)
                #expect(Set(try await provider.channelIDs()) == [stored, unstored])
                #expect(try await provider.channelStoragePolicy(id: stored) == 1)
                #expect(try await provider.channelStoragePolicy(id: unstored) == 0)
                try await provider.deleteChannel(id: unstored)
                #expect(try await provider.channelIDs() == [stored])

                let gone = await #expect(throws: HeraldError.self) { try await provider.deleteChannel(id: unstored) }
                #expect(gone?.code == .notFound, "\(String(describing: gone))")
                let policy = await #expect(throws: HeraldError.self) { try await provider.createChannel(messageStoragePolicy: 2) }
                #expect(policy?.code == .badRequest)
                let malformed = await #expect(throws: HeraldError.self) { try await provider.channelStoragePolicy(id: "not base64!") }
                #expect(malformed?.code == .badRequest)
            }
            // Another team's key: APNs refuses the credentials.
            var stranger = try configuration(harness)
            stranger.teamID = "OTHERTEAM1"
            try await harness.withProvider(stranger) { provider in
                let refused = await #expect(throws: HeraldError.self) { try await provider.channelIDs() }
                #expect(refused?.code == .forbidden, "\(String(describing: refused))")
            }
        }
    }

    @Test func oneBroadcastReachesAThousandActivities() async throws {
        try await APNsHarness.with { harness in
            try await harness.withProvider(try configuration(harness)) { provider in
                let channel = try await provider.createChannel(messageStoragePolicy: 0)
                let listeners = try (0..<1000).map { _ in
                    try harness.emulator.startActivity(
                        topic: APNsHarness.topic, attributesType: "MatchAttributes", contentState: .object([("home", .number(0))]),
                        channelID: channel
                    ).id
                }
                let accepted = harness.emulator.acceptedCount
                let now = Int(harness.emulatorClock.now.timeIntervalSince1970)
                let update = PushNotification(
                    body: .bytes(ByteBuffer(string: #"{"aps":{"timestamp":\#(now),"event":"update","content-state":{"home":1}}}"#)),
                    headers: [("apns-push-type", "liveactivity"), ("apns-topic", APNsHarness.topic + ".push-type.liveactivity")])
                let result = await provider.broadcast(update, channelID: channel)
                #expect(result == .delivered, "\(result)")
                #expect(harness.emulator.acceptedCount == accepted + 1, "one request")
                for id in listeners {
                    #expect(harness.emulator.activity(id: id)?.contentState?["home"] == .number(1))
                }
                // A start cannot be broadcast; an unknown channel is refused.
                let start = PushNotification(
                    body: .bytes(
                        ByteBuffer(
                            string: #"{"aps":{"timestamp":\#(now),"event":"start","content-state":{},"attributes-type":"A","attributes":{},"alert":"x"}}"#)))
                #expect(await provider.broadcast(start, channelID: channel).reason == "BadRequestParams")
                try await provider.deleteChannel(id: channel)
                let unknown = await provider.broadcast(update, channelID: channel)
                #expect(unknown.status == 400 && unknown.outcome == .invalidNotificationFormat, "\(unknown)")
            }
        }
    }

    @Test func aBroadcastRefusedOrFailingByAPNsSaysWhetherToTryAgain() async throws {
        try await APNsHarness.with { harness in
            try await harness.withProvider(try configuration(harness)) { provider in
                let channel = try await provider.createChannel(messageStoragePolicy: 0)
                let now = Int(harness.emulatorClock.now.timeIntervalSince1970)
                let update = PushNotification(
                    body: .bytes(ByteBuffer(string: #"{"aps":{"timestamp":\#(now),"event":"update","content-state":{"home":1}}}"#)))

                // A server error or throttling: tried again, after APNs' retry-after if it gave one.
                harness.emulator.injectFaults(.unavailable, count: 1)
                let unavailable = await provider.broadcast(update, channelID: channel)
                #expect(unavailable.status == 503 && unavailable.disposition == .retryable(retryAfter: nil), "\(unavailable)")
                harness.emulator.injectFaults(Fault(status: 429, reason: "TooManyRequests", retryAfter: 7), count: 1)
                let throttled = await provider.broadcast(update, channelID: channel)
                #expect(throttled.status == 429 && throttled.outcome == .throttled, "\(throttled)")
                #expect(throttled.disposition == .retryable(retryAfter: 7), "\(throttled)")

                // A refused credential: not tried again, and the credential reads as failing.
                harness.emulator.injectFaults(Fault(status: 403, reason: "InvalidProviderToken"), count: 1)
                let refused = await provider.broadcast(update, channelID: channel)
                #expect(refused.status == 403 && refused.disposition == .permanentFailure, "\(refused)")
                #expect(provider.credentialHealth.status == .failing)

                // Then APNs answers again.
                #expect(await provider.broadcast(update, channelID: channel) == .delivered)
                #expect(provider.credentialHealth.status == .working)
            }
        }
    }
}
