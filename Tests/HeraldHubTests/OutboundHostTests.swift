import Foundation
import HeraldCore
import HeraldEmulator
import HeraldHub
import HeraldPush
import NIOCore
import Testing

/// Where the providers that a hub's own credentials make may send: only to the hosts the
/// operator configured, or to the push service's own.
@Suite struct OutboundHostTests {
    static func account(tokenURI: String) throws -> HubCredentials.FCM {
        let credentials = try EmulatorCredentials.makeEphemeral()
        return HubCredentials.FCM(serviceAccountJSON: String(decoding: try credentials.fcmServiceAccountJSON(tokenURI: tokenURI), as: UTF8.self))
    }

    /// A hub's service account names the URL its signed assertion is posted to: it must be
    /// Google's, unless the operator set a token URL for every account (an emulator's, say).
    @Test func anFCMServiceAccountMayNameGooglesTokenEndpointOnly() async throws {
        let factory = PushProviderFactory(logger: hubTestLogger)
        let error = #expect(throws: HeraldError.self) {
            try factory.fcmProvider(try Self.account(tokenURI: "https://attacker.example/token"))
        }
        #expect(error?.code == .badRequest)
        #expect(error?.message.contains("token_uri") == true)
        for uri in ["http://oauth2.googleapis.com/token", "https://oauth2.googleapis.com.attacker.example/token", "https://x@oauth2.googleapis.com/token"] {
            #expect(throws: HeraldError.self, "\(uri)") { try factory.fcmProvider(try Self.account(tokenURI: uri)) }
        }

        let google = try factory.fcmProvider(try Self.account(tokenURI: "https://oauth2.googleapis.com/token"))
        #expect(google.configuration.effectiveTokenURI == "https://oauth2.googleapis.com/token")
        try await google.shutdown()

        // The operator's own token URL replaces every account's.
        var settings = PushServiceSettings()
        settings.fcm.tokenURI = "https://127.0.0.1:8443/token"
        let overridden = try PushProviderFactory(settings: settings, logger: hubTestLogger)
            .fcmProvider(try Self.account(tokenURI: "https://attacker.example/token"))
        #expect(overridden.configuration.effectiveTokenURI == "https://127.0.0.1:8443/token")
        try await overridden.shutdown()
    }

    /// The WNS provider a factory makes refuses a channel on another host than the settings
    /// allow, without a connection.
    @Test func aWNSProviderSendsToAllowedHostsOnly() async throws {
        var settings = PushServiceSettings()
        settings.wns.tokenURI = "https://127.0.0.1:1/token"
        let provider = try PushProviderFactory(settings: settings, logger: hubTestLogger)
            .wnsProvider(.init(packageSID: "ms-app://s-1-15-2-1", clientSecret: "secret"))
        let result = await provider.send(
            PushNotification(body: .bytes(.init(string: "<toast/>"))), to: PushTarget(handle: "https://attacker.example/channel"))
        #expect(result.outcome == .badChannel)
        #expect(provider.tokenExchangeCount == 0, "no token was asked for")
        try await provider.shutdown()
    }
}
