import Testing

@testable import HeraldPush

/// Base URLs as the HTTP/2 providers read them: origin, path prefix, request target.
@Suite struct HTTPEndpointTests {
    @Test func originAndPath() throws {
        let google = try HTTPEndpoint("https://fcm.googleapis.com", name: "FCM endpoint")
        #expect(google.isTLS && google.host == "fcm.googleapis.com" && google.port == 443)
        #expect(google.path == "" && google.target == "/")

        let proxy = try HTTPEndpoint("http://[::1]:8080/fcm/", name: "FCM endpoint")
        #expect(!proxy.isTLS && proxy.host == "::1" && proxy.port == 8080)
        #expect(proxy.path == "/fcm")

        let token = try HTTPEndpoint("https://127.0.0.1:8443/token?x=1", name: "FCM token URI")
        #expect(token.target == "/token?x=1")
        #expect(token.hasSameOrigin(as: try HTTPEndpoint("https://127.0.0.1:8443", name: "FCM endpoint")))
        #expect(!token.hasSameOrigin(as: try HTTPEndpoint("http://127.0.0.1:8443", name: "FCM endpoint")))
        #expect(!google.hasSameOrigin(as: try HTTPEndpoint("https://oauth2.googleapis.com/token", name: "FCM token URI")))
    }

    @Test func notAnHTTPURLIsRefused() {
        let error = #expect(throws: PushProviderError.self) { try HTTPEndpoint("ftp://example.com", name: "FCM endpoint") }
        #expect(error?.message == "FCM endpoint 'ftp://example.com' is not an http(s) URL")
    }
}
