import Foundation
import HeraldCore
import HeraldEmulator
import HeraldTestSupport
import Logging
import Testing

@testable import HeraldPush

/// The providers count their connections (for `herald_push_connections`): WNS from the
/// connection initializers AsyncHTTPClient calls, FCM from its HTTP/2 client (plus the token
/// endpoint's, on another origin): none before the first send, one per connection used after
/// it, none once shut down.
@Suite(.timeLimit(.minutes(2))) struct HTTPClientPoolConnectionTests {
    @Test func fcmConnectionsAreCountedOpenAndClosed() async throws {
        try await FCMHarness.with { harness in
            let device = harness.emulator.registerDevice()
            var configuration = try harness.configuration()
            configuration.connections = 3
            let provider = try FCMProvider(configuration: configuration, logger: Logger(label: "fcm"))
            #expect(provider.openConnections == 0)
            // The token exchange (the emulator's token endpoint shares its origin) and four
            // sends, round-robin over three HTTP/2 connections to the emulator.
            for _ in 0..<4 {
                #expect(await provider.send(dataMessage([("k", "v")]), to: PushTarget(handle: device)) == .delivered)
            }
            #expect(provider.openConnections == 3)
            try await provider.shutdown()
            try await eventually("the connections to be closed") { provider.openConnections == 0 }
        }
    }

    @Test func wnsConnectionsAreCounted() async throws {
        try await WNSHarness.with { harness in
            let channel = harness.emulator.registerChannel()
            var configuration = try harness.configuration()
            configuration.connections = 1
            try await harness.withProvider(configuration) { provider in
                #expect(provider.openConnections == 0)
                #expect(await provider.send(wnsNotification(toastXML), to: PushTarget(handle: channel)) == .delivered)
                #expect(provider.openConnections == 1)
            }
        }
    }
}
