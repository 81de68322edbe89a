import HeraldCore
import Testing

@Suite struct HostAllowListTests {
    @Test(arguments: [
        ("https://wns2-by3p.notify.windows.com/w/?token=x", true),
        ("https://DB5P.Notify.Windows.com/?token=x", true),
        ("https://a.b.notify.windows.com/x", true),
        // The domain itself is not below it, and a look-alike suffix is another domain.
        ("https://notify.windows.com/x", false),
        ("https://evilnotify.windows.com/x", false),
        ("https://notify.windows.com.attacker.example/x", false),
        ("https://attacker.example/x", false),
        // Credentials in the URL, another scheme, no host, two parsers reading two hosts.
        ("https://x.notify.windows.com@attacker.example/x", false),
        ("https://user:pw@db5p.notify.windows.com/x", false),
        ("http://db5p.notify.windows.com/x", false),
        ("https:///x", false),
        ("https://attacker.example\\@db5p.notify.windows.com/x", false),
        ("https://attacker.example#@db5p.notify.windows.com/x", false),
    ])
    func wnsChannelHosts(url: String, allowed: Bool) {
        #expect((HostAllowList.wns.allowedHost(ofHTTPSURL: url) != nil) == allowed, "\(url)")
    }

    @Test func entriesAreHostsDomainsOrAnyHost() {
        let list = HostAllowList(commaSeparated: " 127.0.0.1, *.push.example.net ,.other.example,[::1],, ")
        #expect(list.allows(host: "127.0.0.1"))
        #expect(!list.allows(host: "127.0.0.2"))
        #expect(list.allows(host: "a.push.example.net"))
        #expect(!list.allows(host: "push.example.net"))
        #expect(list.allows(host: "b.other.example"))
        #expect(list.allows(host: "::1"))
        #expect(list.allows(host: "[::1]"))
        #expect(list.allowedHost(ofHTTPSURL: "https://[::1]:8443/push") != nil)
        #expect(list.description == "127.0.0.1,::1,*.other.example,*.push.example.net")
        #expect(HostAllowList(commaSeparated: " , ").isEmpty)
        #expect(HostAllowList.anyHost.allows(host: "anything.example"))
        #expect(HostAllowList.webPushServices.allows(host: "web.push.apple.com"))
        #expect(!HostAllowList.webPushServices.allows(host: "169.254.169.254"))

        var union = HostAllowList.wns
        union.formUnion(["127.0.0.1"])
        #expect(union.allows(host: "127.0.0.1") && union.allows(host: "x.notify.windows.com"))
    }

    @Test func channelHostsAreCheckedForURLPlatformsOnly() throws {
        let hosts = PushChannelHosts()
        try hosts.check("https://db5p.notify.windows.com/?token=x", platform: .wns)
        try hosts.check("https://fcm.googleapis.com/fcm/send/x", platform: .webpush)
        // Tokens, not URLs: sent only to the configured service.
        try hosts.check(String(repeating: "ab", count: 32), platform: .apns)
        try hosts.check("fcm-token:1", platform: .fcm)
        let error = #expect(throws: HeraldError.self) {
            try hosts.check("https://attacker.example/x", platform: .wns)
        }
        #expect(error?.code == .badRequest)
        #expect(error?.message.contains("attacker.example") == true)
        #expect(throws: HeraldError.self) { try hosts.check("https://attacker.example/x", platform: .webpush) }
    }
}
