import HeraldPush
import Testing

/// Every configuration that holds a key or a secret prints without it: interpolated,
/// described, reflected and dumped.
@Suite struct ConfigurationRedactionTests {
    static let pemBody = "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgSECRETSECRETSECRET"
    static let pem = "-----BEGIN PRIVATE KEY-----\n\(pemBody)\n-----END PRIVATE KEY-----\n"

    /// `value` as each way of printing it shows it.
    static func printed<T>(_ value: T) -> [String] {
        var dumped = ""
        dump(value, to: &dumped)
        return ["\(value)", String(describing: value), String(reflecting: value), dumped]
    }

    @Test func apnsConfigurationHidesItsKey() {
        let configuration = APNsConfiguration(teamID: "TEAM123456", keyID: "KEY1234567", privateKeyPEM: Self.pem, topic: "app.example")
        for text in Self.printed(configuration) {
            #expect(!text.contains(Self.pemBody), "\(text)")
            #expect(!text.contains("BEGIN PRIVATE KEY"), "\(text)")
            #expect(text.contains("KEY1234567"), "\(text)")
            #expect(text.contains("<redacted>"), "\(text)")
        }
    }

    @Test func webPushConfigurationHidesItsKey() {
        let raw = "q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94"
        for key in [Self.pem, raw] {
            let configuration = WebPushConfiguration(vapidPrivateKey: key, subject: "mailto:ops@example.com")
            for text in Self.printed(configuration) {
                #expect(!text.contains(Self.pemBody), "\(text)")
                #expect(!text.contains(raw), "\(text)")
                #expect(text.contains("mailto:ops@example.com"), "\(text)")
                #expect(text.contains("<redacted>"), "\(text)")
            }
        }
    }

    @Test func fcmConfigurationHidesTheServiceAccountKey() {
        let account = FCMServiceAccount(projectID: "demo-project", clientEmail: "push@demo.iam.example", privateKey: Self.pem)
        for text in Self.printed(FCMConfiguration(serviceAccount: account)) + Self.printed(account) {
            #expect(!text.contains(Self.pemBody), "\(text)")
            #expect(text.contains("push@demo.iam.example"), "\(text)")
            #expect(text.contains("<redacted>"), "\(text)")
        }
    }

    @Test func wnsConfigurationHidesItsSecret() {
        let configuration = WNSConfiguration(packageSID: "ms-app://s-1-15-2-1", clientSecret: "client-SECRET-value")
        for text in Self.printed(configuration) {
            #expect(!text.contains("client-SECRET-value"), "\(text)")
            #expect(text.contains("ms-app://s-1-15-2-1"), "\(text)")
            #expect(text.contains("<redacted>"), "\(text)")
        }
    }
}
