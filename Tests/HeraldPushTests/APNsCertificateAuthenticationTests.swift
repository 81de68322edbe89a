import Foundation
import HeraldCore
import HeraldEmulator
import HeraldTLS
import Logging
import Testing

@testable import HeraldPush

extension APNsHarness {
    /// A provider configuration that signs in with `certificate` (topic: its subject UID unless given).
    func configuration(certificate: ClientCertificate, topic: String? = nil) throws -> APNsConfiguration {
        var configuration = APNsConfiguration(environment: .sandbox, clientCertificate: certificate, topic: topic)
        configuration.endpoint = emulator.baseURL
        configuration.trustRoots = [try authority.sslCertificate]
        configuration.connections = 1
        configuration.timeout = .seconds(20)
        configuration.connectTimeout = .seconds(20)
        return configuration
    }
}

/// Certificate authentication: the provider presents a client certificate on its TLS
/// connections and sends no provider token; the emulator accepts certificates of its CA for
/// their own topic.
@Suite(.timeLimit(.minutes(2))) struct APNsCertificateAuthenticationTests {
    @Test func aCertificateOfTheEmulatorsCADeliversWithoutAnAuthorizationHeader() async throws {
        // No signing key at all: a request with any `authorization` header would be refused
        // with 403 InvalidProviderToken, so a delivery proves that none was sent.
        try await APNsHarness.with(clientCertificates: true, { $0.signingKeys = [] }) { harness in
            let certificate = try harness.authority.issueAPNsClientCertificate(topic: APNsHarness.topic).certificate
            let configuration = try harness.configuration(certificate: certificate)
            #expect(configuration.topic == APNsHarness.topic, "the topic comes from the certificate's UID")
            let device = harness.emulator.registerDevice(topic: APNsHarness.topic)
            try await harness.withProvider(configuration) { provider in
                #expect(provider.tokenEntry == nil)
                #expect(provider.credentialExpiry == certificate.notValidAfter)
                let result = await provider.send(try alert("With a certificate"), to: PushTarget(handle: device))
                #expect(result == .delivered, "\(result)")
                // A topic with one of APNs' suffixes belongs to the certificate's app too.
                let voip = await provider.send(
                    try alert("VoIP", headers: [("apns-topic", APNsHarness.topic + ".voip"), ("apns-push-type", "voip")]),
                    to: PushTarget(handle: device))
                #expect(voip == .delivered, "\(voip)")
            }
            let inbox = harness.emulator.notifications(for: device)
            #expect(inbox.map(\.payload) == [#"{"aps":{"alert":"With a certificate"}}"#, #"{"aps":{"alert":"VoIP"}}"#])
            #expect(inbox.first?.headers["apns-topic"] == APNsHarness.topic)
        }
    }

    @Test func aCertificateOfAnotherCAIsMissingProviderToken() async throws {
        try await APNsHarness.with(clientCertificates: true) { harness in
            let stranger = try CertificateAuthority.makeEphemeral()
            let certificate = try stranger.issueAPNsClientCertificate(topic: APNsHarness.topic).certificate
            let device = harness.emulator.registerDevice(topic: APNsHarness.topic)
            try await harness.withProvider(try harness.configuration(certificate: certificate)) { provider in
                let result = await provider.send(try alert("Refused"), to: PushTarget(handle: device))
                #expect(result.status == 403)
                #expect(result.reason == APNsReason.missingProviderToken.rawValue)
                #expect(result.outcome == .invalidCredentials)
            }
            #expect(harness.emulator.notifications(for: device).isEmpty)
        }
    }

    @Test func aTopicOtherThanTheCertificatesIsDisallowed() async throws {
        try await APNsHarness.with(clientCertificates: true) { harness in
            let certificate = try harness.authority.issueAPNsClientCertificate(topic: APNsHarness.topic).certificate
            let device = harness.emulator.registerDevice(topic: APNsHarness.topic)
            try await harness.withProvider(try harness.configuration(certificate: certificate)) { provider in
                let result = await provider.send(
                    try alert("Other app", headers: [("apns-topic", "com.example.other")]), to: PushTarget(handle: device))
                #expect(result.status == 400)
                #expect(result.reason == APNsReason.topicDisallowed.rawValue)
            }
            // The configured topic is not the certificate's: refused the same way.
            try await harness.withProvider(try harness.configuration(certificate: certificate, topic: "com.example.other")) {
                provider in
                let result = await provider.send(try alert("Other app"), to: PushTarget(handle: device))
                #expect(result.reason == APNsReason.topicDisallowed.rawValue)
            }
            #expect(harness.emulator.notifications(for: device).isEmpty)
        }
    }

    @Test func anExpiredCertificateFailsTheHandshake() async throws {
        try await APNsHarness.with(clientCertificates: true) { harness in
            let issued = Date().addingTimeInterval(-10 * 86400)
            let certificate = try harness.authority.issueAPNsClientCertificate(
                topic: APNsHarness.topic, now: issued, notValidAfter: Date().addingTimeInterval(-86400)
            ).certificate
            let device = harness.emulator.registerDevice(topic: APNsHarness.topic)
            try await harness.withProvider(try harness.configuration(certificate: certificate)) { provider in
                let result = await provider.send(try alert("Expired"), to: PushTarget(handle: device))
                #expect(result.outcome == .pnsUnreachable, "\(result)")
                #expect(result.status == nil)
            }
            #expect(harness.emulator.notifications(for: device).isEmpty)
        }
    }

    @Test func tokenClientsStillDeliverWhenCertificatesAreAskedFor() async throws {
        try await APNsHarness.with(clientCertificates: true) { harness in
            let device = harness.emulator.registerDevice(topic: APNsHarness.topic)
            try await harness.withProvider { provider in
                let result = await provider.send(try alert("Token"), to: PushTarget(handle: device))
                #expect(result == .delivered)
            }
        }
    }

    @Test func aConfigurationWithBothAKeyAndACertificateIsRefused() async throws {
        let authority = try CertificateAuthority.makeEphemeral()
        let certificate = try authority.issueAPNsClientCertificate(topic: "com.example.app").certificate
        var configuration = APNsConfiguration(clientCertificate: certificate)
        configuration.teamID = "TEAM123456"
        configuration.keyID = "KEY1234567"
        #expect(throws: PushProviderError.invalidConfiguration("")) {
            _ = try APNsProvider(configuration: configuration, logger: Logger(label: "apns"))
        }
        // Redacted: the certificate is described, its key never.
        let described = "\(APNsConfiguration(clientCertificate: certificate))"
        #expect(described.contains("UID com.example.app"), "\(described)")
        #expect(!described.contains("PRIVATE KEY"))
    }
}
