import Foundation
import HeraldCore
import HeraldEmulator
import NIOCore
import Testing

@testable import HeraldPush

/// A provider's credential health against the emulators: configured until used, working once
/// the service accepts the credential, failing (with a message that holds no key or secret)
/// when it refuses it, and working again after.
@Suite(.timeLimit(.minutes(2))) struct PushCredentialHealthTests {
    @Test func apnsTokenRefusedThenAcceptedAgain() async throws {
        try await APNsHarness.with { harness in
            let device = harness.emulator.registerDevice(topic: APNsHarness.topic)
            let note = try alert("x")
            try await harness.withProvider { provider in
                #expect(provider.credentialHealth == PushCredentialHealth(method: "token (.p8 key)"))
                #expect(await provider.send(note, to: PushTarget(handle: device)) == .delivered)
                let working = provider.credentialHealth
                #expect(working.status == .working)
                #expect(working.lastSuccessAt != nil && working.lastError == nil)

                harness.emulator.injectFaults(Fault(status: 403, reason: "InvalidProviderToken"), count: 1)
                #expect(await provider.send(note, to: PushTarget(handle: device)).outcome == .invalidCredentials)
                let failing = provider.credentialHealth
                #expect(failing.status == .failing)
                #expect(
                    failing.lastError == "APNs refused the provider token of key \(harness.keyID): InvalidProviderToken (HTTP 403)")
                #expect(failing.lastErrorAt != nil)

                #expect(await provider.send(note, to: PushTarget(handle: device)) == .delivered)
                #expect(provider.credentialHealth.status == .working)
                #expect(provider.credentialHealth.lastError == failing.lastError)
            }
        }
    }

    @Test func wnsTokenRefusedByThePushServiceThenAccepted() async throws {
        try await WNSHarness.with { harness in
            let channel = harness.emulator.registerChannel()
            try await harness.withProvider { provider in
                #expect(provider.credentialHealth.status == .configured)
                #expect(provider.credentialHealth.method == "client credentials")
                #expect(await provider.send(wnsNotification(toastXML), to: PushTarget(handle: channel)) == .delivered)
                #expect(provider.credentialHealth.status == .working)

                // 401 to the send and to its repeat with a new token.
                harness.emulator.injectFaults(Fault(status: 401, reason: "Token expired"), count: 2)
                let refused = await provider.send(wnsNotification(toastXML), to: PushTarget(handle: channel))
                #expect(refused.outcome == .invalidCredentials)
                let failing = provider.credentialHealth
                #expect(failing.status == .failing)
                let message = try #require(failing.lastError)
                #expect(message.hasPrefix("WNS refused the credentials: HTTP 401"), "\(message)")
                #expect(!message.contains(WNSHarness.clientSecret) && !message.contains("Bearer"))

                #expect(await provider.send(wnsNotification(toastXML), to: PushTarget(handle: channel)) == .delivered)
                #expect(provider.credentialHealth.status == .working)
            }
        }
    }

    @Test func wnsWrongSecretFailsAtTheTokenEndpointWithoutTheSecret() async throws {
        try await WNSHarness.with { harness in
            let channel = harness.emulator.registerChannel()
            let secret = "Wr0ngSecret+Wr0ngSecret/Wr0ng="
            try await harness.withProvider(try harness.configuration(clientSecret: secret)) { provider in
                let refused = await provider.send(wnsNotification(toastXML), to: PushTarget(handle: channel))
                #expect(refused.outcome == .invalidCredentials)
                let failing = provider.credentialHealth
                #expect(failing.status == .failing && failing.lastSuccessAt == nil)
                let message = try #require(failing.lastError)
                #expect(message.contains("400 invalid_client"), "\(message)")
                #expect(!message.contains(secret))
            }
        }
    }
}
