import AsyncHTTPClient
import Foundation
import HTTPTypes
import HeraldServer
import Hummingbird
import HummingbirdTesting
import NIOHTTP1
import Testing

/// Where the console is served: an operator's password and session never cross a network in
/// clear. On plain HTTP only on a loopback address or behind a proxy that terminates TLS; on
/// the TLS listener always, with `Strict-Transport-Security`.
@Suite struct ConsoleExposureTests {
    @Test func plainHTTPOffLoopbackRefusesTheConsoleAndSaysWhereItIs() async throws {
        try await TestHerald.withHerald(configure: { $0.host = "0.0.0.0" }) { herald in
            let console = try Console(hubs: herald.registry, configuration: herald.server)
            let (_, password) = try await console.operators.create(name: "ops")
            try await herald.application(console: console).test(.router) { client in
                for path in ["/console", "/console/sign-in", "/console/hubs/app"] {
                    try await client.execute(uri: path, method: .get) { response in
                        #expect(response.status == .forbidden, "\(path)")
                        let text = String(buffer: response.body)
                        #expect(text.contains("not served over plain HTTP") && text.contains("HTTPS (port 8443)"), "\(text)")
                        #expect(response.headers[.setCookie] == nil)
                    }
                }
                // A sign-in posted anyway goes nowhere: no session.
                let browser = ConsoleClient(client)
                let signedIn = try await browser.signIn("ops", password)
                #expect(signedIn.status == .forbidden)
                #expect(browser.cookies["herald_console"] == nil)
                // The APIs are served as before.
                try await client.execute(uri: "/health", method: .get) { response in #expect(response.status == .ok) }
            }
        }
    }

    @Test func plainHTTPBehindATLSProxyOrOnLoopbackServesIt() async throws {
        for configure: @Sendable (inout ServerConfiguration) -> Void in [
            {
                $0.host = "0.0.0.0"
                $0.publicURL = "https://push.example.com"
            }, { $0.host = "127.0.0.1" }, { $0.host = "::1" },
        ] {
            try await TestHerald.withHerald(configure: configure) { herald in
                let console = try Console(hubs: herald.registry, configuration: herald.server)
                try await herald.application(console: console).test(.router) { client in
                    try await client.execute(uri: "/console/sign-in", method: .get) { response in
                        #expect(response.status == .ok, "\(herald.server.host)")
                    }
                }
            }
        }
    }

    @Test func theTLSListenerSendsHSTSAndThePlainOneDoesNot() async throws {
        try await HubTestServer.withServer { server in
            let tls = try await server.httpClient.get(url: "https://127.0.0.1:\(server.tlsPort)/health").get()
            #expect(tls.headers.first(name: "strict-transport-security") == "max-age=31536000")
            let plain = try await server.httpClient.get(url: "http://127.0.0.1:\(server.httpPort)/health").get()
            #expect(plain.headers.first(name: "strict-transport-security") == nil)
            // Errors too: a browser that was told once keeps to TLS.
            let missing = try await server.httpClient.get(url: "https://127.0.0.1:\(server.tlsPort)/no-such-page").get()
            #expect(missing.status.code == 404)
            #expect(missing.headers.first(name: "strict-transport-security") == "max-age=31536000")
        }
    }
}
