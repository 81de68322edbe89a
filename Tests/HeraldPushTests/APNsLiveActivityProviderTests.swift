import Foundation
import HeraldCore
import HeraldEmulator
import HeraldTLS
import NIOCore
import Testing

@testable import HeraldPush

/// Live Activity pushes from the provider: `apns-push-type: liveactivity` goes to the app's
/// `.push-type.liveactivity` topic, and a push-to-start with a certificate is refused by APNs
/// with a reason the hub records.
@Suite(.timeLimit(.minutes(2))) struct APNsLiveActivityProviderTests {
    static func liveActivity(_ aps: String, headers: [(name: String, value: String)] = []) -> PushNotification {
        PushNotification(
            body: .bytes(ByteBuffer(string: #"{"aps":\#(aps)}"#)), headers: [("apns-push-type", "liveactivity")] + headers)
    }

    static func startAPS(at timestamp: Int) -> String {
        #"{"timestamp":\#(timestamp),"event":"start","content-state":{"home":0,"away":0},"attributes-type":"MatchAttributes","attributes":{"homeTeam":"Lions"},"alert":{"title":"Kick-off","body":"Lions v Bears"}}"#
    }

    @Test func aPushToStartWithATokenStartsTheActivityOnTheLiveActivityTopic() async throws {
        try await APNsHarness.with { harness in
            let startToken = harness.emulator.registerPushToStartToken(topic: APNsHarness.topic, attributesType: "MatchAttributes")
            let now = Int(harness.emulatorClock.now.timeIntervalSince1970)
            try await harness.withProvider { provider in
                let result = await provider.send(Self.liveActivity(Self.startAPS(at: now)), to: PushTarget(handle: startToken))
                #expect(result == .delivered, "\(result)")
            }
            let received = try #require(harness.emulator.notifications(for: startToken).last)
            #expect(received.headers["apns-topic"] == APNsHarness.topic + ".push-type.liveactivity")
            #expect(received.headers["apns-push-type"] == "liveactivity")
            let activity = try #require(harness.emulator.activities(token: startToken).first)
            #expect(activity.attributesType == "MatchAttributes")
            #expect(activity.updateToken != nil)
        }
    }

    @Test func aPushToStartWithACertificateIsRefusedAsTopicDisallowed() async throws {
        try await APNsHarness.with(clientCertificates: true) { harness in
            let certificate = try harness.authority.issueAPNsClientCertificate(topic: APNsHarness.topic).certificate
            let startToken = harness.emulator.registerPushToStartToken(topic: APNsHarness.topic, attributesType: "MatchAttributes")
            let now = Int(harness.emulatorClock.now.timeIntervalSince1970)
            try await harness.withProvider(try harness.configuration(certificate: certificate)) { provider in
                let result = await provider.send(Self.liveActivity(Self.startAPS(at: now)), to: PushTarget(handle: startToken))
                #expect(result.status == 400)
                #expect(result.reason == APNsReason.topicDisallowed.rawValue)
                #expect(result.outcome == .invalidNotificationFormat)
                #expect(result.disposition == .permanentFailure)
            }
            #expect(harness.emulator.activities(token: startToken).isEmpty)
        }
    }
}
