import AsyncHTTPClient
import Foundation
import HeraldEmulator
import NIOCore
import NIOHTTP1
import Testing

@Suite("WNS emulator")
struct WNSEmulatorTests {
    // MARK: - Token endpoint

    @Test("good client credentials get a bearer token for a day")
    func tokenEndpoint() async throws {
        try await WNSHarness.with { wns in
            #expect(wns.emulator.tokenURI == wns.emulator.baseURL + "/accesstoken.srf")
            let response = try await wns.requestToken()
            #expect(response.status == 200)
            #expect(response.headers.first(name: "cache-control") == "no-store")
            let json = try response.json()
            let token = try #require(json["access_token"] as? String)
            #expect(Data(base64Encoded: token)?.count == 96)
            #expect(json["token_type"] as? String == "bearer")
            #expect(json["expires_in"] as? Int == 86_400)
            #expect(wns.emulator.tokenRequestCount == 1)
        }
    }

    enum BadTokenRequest: String, CaseIterable, CustomTestStringConvertible {
        case wrongSecret, unknownClient, missingSecret, missingGrantType, otherGrantType, otherScope, missingScope
        var testDescription: String { rawValue }
    }

    @Test("bad token requests get OAuth errors", arguments: BadTokenRequest.allCases)
    func badTokenRequest(_ kind: BadTokenRequest) async throws {
        try await WNSHarness.with { wns in
            var fields = WNSHarness.goodForm
            func set(_ name: String, _ value: String?) {
                fields.removeAll { $0.0 == name }
                if let value { fields.append((name, value)) }
            }
            let expected: String
            switch kind {
            case .wrongSecret:
                set("client_secret", "Vex8L9WOFZuj95euaLrvSH7XyoDhLJc7+/y=")
                expected = "invalid_client"
            case .unknownClient:
                set("client_id", "ms-app://s-1-15-2-1")
                expected = "invalid_client"
            case .missingSecret:
                set("client_secret", nil)
                expected = "invalid_client"
            case .missingGrantType:
                set("grant_type", nil)
                expected = "invalid_request"
            case .otherGrantType:
                set("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer")
                expected = "unsupported_grant_type"
            case .otherScope:
                set("scope", "https://www.googleapis.com/auth/firebase.messaging")
                expected = "invalid_scope"
            case .missingScope:
                set("scope", nil)
                expected = "invalid_scope"
            }
            let response = try await wns.requestToken(fields)
            #expect(response.status == 400)
            let json = try response.json()
            #expect(json["error"] as? String == expected)
            #expect((json["error_description"] as? String)?.isEmpty == false)
        }
    }

    // MARK: - Notifications

    @Test("a toast is received and recorded with its X-WNS headers")
    func toastReceived() async throws {
        try await WNSHarness.with { wns in
            let channel = wns.emulator.registerChannel()
            #expect(channel.hasPrefix(wns.emulator.baseURL + "/w/?token="))
            let response = try await wns.notify(
                channel, headers: [("X-WNS-TTL", "60"), ("X-WNS-Tag", "t1"), ("X-WNS-RequestForStatus", "true")])
            #expect(response.status == 200)
            #expect(response.version == .http2)
            #expect(response.wnsStatus == "received")
            #expect(response.headers.first(name: "x-wns-deviceconnectionstatus") == "connected")
            let messageID = try #require(response.headers.first(name: "x-wns-msg-id"))
            #expect(response.body.readableBytes == 0)

            let inbox = wns.emulator.notifications(for: channel)
            try #require(inbox.count == 1)
            #expect(inbox[0].id == messageID)
            #expect(inbox[0].token == channel)
            #expect(inbox[0].payload == WNSHarness.toast)
            #expect(inbox[0].headers["x-wns-type"] == "wns/toast")
            #expect(inbox[0].headers["x-wns-ttl"] == "60")
            #expect(inbox[0].headers["x-wns-tag"] == "t1")
            #expect(inbox[0].headers["x-wns-requestforstatus"] == "true")
            #expect(inbox[0].headers["content-type"] == "text/xml")
            #expect(inbox[0].receivedAt == wns.clock.now)
            #expect(wns.emulator.acceptedCount == 1)

            // The channel can be named by its token alone, encoded or not.
            let token = String(channel.split(separator: "=", maxSplits: 1)[1])
            #expect(wns.emulator.notifications(for: token).count == 1)
            #expect(wns.emulator.notifications(for: token.removingPercentEncoding!).count == 1)
        }
    }

    @Test(
        "raw, tile and badge notifications",
        arguments: [
            ("wns/raw", "application/octet-stream", [0x00, 0x01, 0xFE, 0xFF] as [UInt8]),
            (
                "wns/tile", "text/xml; charset=utf-8",
                Array(#"<tile><visual version="2"><binding template="TileSquare150x150Text04"><text id="1">Hi</text></binding></visual></tile>"#.utf8)
            ),
            ("wns/badge", "text/xml", Array(#"<badge value="alert"/>"#.utf8)),
        ])
    func otherTypes(_ type: String, _ contentType: String, _ body: [UInt8]) async throws {
        try await WNSHarness.with { wns in
            let channel = wns.emulator.registerChannel()
            let response = try await wns.notify(channel, type: type, body: body, contentType: contentType)
            #expect(response.status == 200, "\(response.errorDescription ?? "")")
            let received = try #require(wns.emulator.notifications(for: channel).first)
            #expect(received.headers["x-wns-type"] == type)
            if type == "wns/raw" {
                #expect(received.payload == Data(body).base64EncodedString())
            } else {
                #expect(received.payload == String(decoding: body, as: UTF8.self))
            }
        }
    }

    @Test("the bearer token is checked: missing, unknown, expired")
    func authorization() async throws {
        try await WNSHarness.with { wns in
            let channel = wns.emulator.registerChannel()
            let missing = try await wns.client.send(
                .POST, channel, headers: [("x-wns-type", "wns/toast"), ("content-type", "text/xml")], body: WNSHarness.toast)
            #expect(missing.status == 401)
            #expect(missing.headers.first(name: "www-authenticate")?.hasPrefix("Bearer") == true)

            let unknown = try await wns.notify(channel, authorization: "Bearer bm90IGEgdG9rZW4=")
            #expect(unknown.status == 401)
            #expect(unknown.errorDescription == "Invalid token")

            let token = try await wns.accessToken()
            wns.clock.advance(by: 86_400)
            let expired = try await wns.notify(channel, authorization: "Bearer " + token)
            #expect(expired.status == 401)
            #expect(expired.errorDescription == "Token expired")
            #expect(expired.headers.first(name: "www-authenticate")?.contains("Token expired") == true)
            #expect(wns.emulator.notifications(for: channel).isEmpty)
        }
    }

    enum BadHeaders: String, CaseIterable, CustomTestStringConvertible {
        case missingType, unknownType, repeatedType, rawAsXML, toastAsOctets, missingContentType, ttlNotANumber
        case negativeTTL, tagTooLong, emptyGroup, cachePolicy, requestForStatus
        var testDescription: String { rawValue }
    }

    @Test("malformed headers get 400 with a description", arguments: BadHeaders.allCases)
    func badHeaders(_ kind: BadHeaders) async throws {
        try await WNSHarness.with { wns in
            let channel = wns.emulator.registerChannel()
            let response: TestResponse
            switch kind {
            case .missingType:
                response = try await wns.notify(channel, type: nil)
            case .unknownType:
                response = try await wns.notify(channel, type: "wns/notification")
            case .repeatedType:
                response = try await wns.notify(channel, headers: [("x-wns-type", "wns/toast")])
            case .rawAsXML:
                response = try await wns.notify(channel, type: "wns/raw", body: [1, 2], contentType: "text/xml")
            case .toastAsOctets:
                response = try await wns.notify(channel, contentType: "application/octet-stream")
            case .missingContentType:
                var headers = [("authorization", "Bearer " + (try await wns.accessToken())), ("x-wns-type", "wns/raw")]
                headers.append(("x-wns-ttl", "5"))
                response = try await wns.client.send(.POST, channel, headers: headers, bodyBytes: [1])
            case .ttlNotANumber:
                response = try await wns.notify(channel, headers: [("x-wns-ttl", "soon")])
            case .negativeTTL:
                response = try await wns.notify(channel, headers: [("x-wns-ttl", "-1")])
            case .tagTooLong:
                response = try await wns.notify(channel, headers: [("x-wns-tag", String(repeating: "t", count: 65))])
            case .emptyGroup:
                response = try await wns.notify(channel, headers: [("x-wns-group", "")])
            case .cachePolicy:
                response = try await wns.notify(channel, headers: [("x-wns-cache-policy", "sometimes")])
            case .requestForStatus:
                response = try await wns.notify(channel, headers: [("x-wns-requestforstatus", "yes")])
            }
            #expect(response.status == 400)
            #expect(response.errorDescription?.isEmpty == false)
            #expect(wns.emulator.acceptedCount == 0)
        }
    }

    static let wellFormed: [String] = [
        #"<toast/>"#,
        "\u{FEFF}<?xml version=\"1.0\"?>\n<!-- hi -->\n<toast launch='a&amp;b'>\n  <visual><binding template=\"ToastGeneric\"><text>x &lt; y &#233; &#xE9; ü</text></binding></visual>\n</toast>\n",
        #"<toast><visual><binding template="ToastGeneric"><text><![CDATA[<b>bold</b> & more]]></text></binding></visual><?pi data?></toast>"#,
        #"<toast xmlns:a="urn:x"><a:item a:attr = "1" /></toast>"#,
    ]

    static let malformed: [String] = [
        "",
        "hello",
        "<toast>",
        "<toast></tile>",
        "<toast><visual></toast></visual>",
        "<toast a=1/>",
        #"<toast a="1"b="2"/>"#,
        #"<toast a="<"/>"#,
        "<toast>&nbsp;</toast>",
        "<toast>&#0;</toast>",
        "<toast>a & b</toast>",
        "<toast/><toast/>",
        "<toast/>trailing",
        "<!DOCTYPE toast><toast/>",
        "<toast><!-- a -- b --></toast>",
        "<toast>]]></toast>",
        "<toast><?xml version=\"1.0\"?></toast>",
        "<toast>\u{01}</toast>",
    ]

    @Test("well-formed toasts are accepted", arguments: wellFormed)
    func wellFormedXML(_ xml: String) async throws {
        try await WNSHarness.with { wns in
            let response = try await wns.notify(wns.emulator.registerChannel(), xml: xml)
            #expect(response.status == 200, "\(response.errorDescription ?? "")")
        }
    }

    @Test("malformed XML gets 400", arguments: malformed)
    func malformedXML(_ xml: String) async throws {
        try await WNSHarness.with { wns in
            let response = try await wns.notify(wns.emulator.registerChannel(), xml: xml)
            #expect(response.status == 400)
            #expect(response.errorDescription?.isEmpty == false)
        }
    }

    @Test("invalid UTF-8 and a root element of another type get 400")
    func wrongRootAndBadUTF8() async throws {
        try await WNSHarness.with { wns in
            let channel = wns.emulator.registerChannel()
            let tileAsToast = try await wns.notify(channel, xml: "<tile/>")
            #expect(tileAsToast.status == 400)
            #expect(tileAsToast.errorDescription?.contains("<toast>") == true)
            let badgeAsTile = try await wns.notify(channel, type: "wns/tile", xml: #"<badge value="1"/>"#)
            #expect(badgeAsTile.status == 400)
            let badUTF8 = try await wns.notify(channel, body: Array("<toast>".utf8) + [0xC3, 0x28] + Array("</toast>".utf8))
            #expect(badUTF8.status == 400)
        }
    }

    @Test("at most 5000 bytes; an empty body is refused")
    func sizeLimit() async throws {
        try await WNSHarness.with { wns in
            let channel = wns.emulator.registerChannel()
            let fits = try await wns.notify(channel, type: "wns/raw", body: [UInt8](repeating: 7, count: 5000))
            #expect(fits.status == 200)
            let tooLarge = try await wns.notify(channel, type: "wns/raw", body: [UInt8](repeating: 7, count: 5001))
            #expect(tooLarge.status == 413)
            let xml = "<toast>" + String(repeating: "x", count: 4994) + "</toast>"
            #expect(try await wns.notify(channel, xml: xml).status == 413)
            let empty = try await wns.notify(channel, type: "wns/raw", body: [])
            #expect(empty.status == 400)
            #expect(wns.emulator.acceptedCount == 1)
        }
    }

    @Test("unknown channel 404, expired channel 410, another app's channel 403, GET 405")
    func channelErrors() async throws {
        let other = WNSEmulator.App(clientID: "ms-app://s-1-15-2-9", clientSecret: "other-secret")
        try await WNSHarness.with(configure: { $0.apps.append(other) }) { wns in
            let unknown = try await wns.notify(wns.emulator.baseURL + "/w/?token=AwYAAABz%2bunknown%3d")
            #expect(unknown.status == 404)
            let noToken = try await wns.notify(wns.emulator.baseURL + "/w/")
            #expect(noToken.status == 404)

            let channel = wns.emulator.registerChannel()
            wns.emulator.expire(channel: channel)
            #expect(try await wns.notify(channel).status == 410)

            let othersChannel = wns.emulator.registerChannel(clientID: other.clientID)
            let forbidden = try await wns.notify(othersChannel)
            #expect(forbidden.status == 403)
            var fields = WNSHarness.goodForm
            fields.removeAll { $0.0 == "client_id" || $0.0 == "client_secret" }
            fields += [("client_id", other.clientID), ("client_secret", other.clientSecret)]
            let otherToken = try #require(try await wns.requestToken(fields).json()["access_token"] as? String)
            #expect(try await wns.notify(othersChannel, authorization: "Bearer " + otherToken).status == 200)

            let get = try await wns.client.send(.GET, wns.emulator.registerChannel())
            #expect(get.status == 405)
        }
    }

    @Test("faults: throttling is 406 channelthrottled, others keep their status")
    func faults() async throws {
        try await WNSHarness.with { wns in
            let channel = wns.emulator.registerChannel()
            wns.emulator.injectFaults(.throttled.withRetryAfter(30), count: 1)
            wns.emulator.injectFaults(.unavailable, count: 1)
            wns.emulator.injectFaults(Fault(status: 500, reason: "Internal"), count: 1)
            let throttled = try await wns.notify(channel)
            #expect(throttled.status == 406)
            #expect(throttled.wnsStatus == "channelthrottled")
            #expect(throttled.headers.first(name: "retry-after") == "30")
            let unavailable = try await wns.notify(channel)
            #expect(unavailable.status == 503)
            #expect(unavailable.errorDescription == "ServiceUnavailable")
            let internalError = try await wns.notify(channel)
            #expect(internalError.status == 500)
            #expect(try await wns.notify(channel).status == 200)

            // A malformed request is refused for what it is, without using up a fault.
            wns.emulator.injectFaults(.unavailable, count: 1)
            #expect(try await wns.notify(channel, type: nil).status == 400)
            #expect(try await wns.notify(channel).status == 503)
            wns.emulator.injectFaults(.unavailable, count: 5)
            wns.emulator.clearFaults()
            #expect(try await wns.notify(channel).status == 200)
        }
    }

    @Test("an offline device: toasts and raw are dropped, tiles cached, raw cached on request")
    func offlineDevice() async throws {
        try await WNSHarness.with { wns in
            let channel = wns.emulator.registerChannel()
            wns.emulator.setConnected(false, channel: channel)

            let toast = try await wns.notify(channel)
            #expect(toast.status == 200)
            #expect(toast.wnsStatus == "dropped")
            #expect(toast.headers.first(name: "x-wns-deviceconnectionstatus") == "disconnected")

            let raw = try await wns.notify(channel, type: "wns/raw", body: [1])
            #expect(raw.wnsStatus == "dropped")
            let cachedRaw = try await wns.notify(channel, type: "wns/raw", body: [2], headers: [("x-wns-cache-policy", "cache")])
            #expect(cachedRaw.wnsStatus == "received")
            #expect(cachedRaw.headers.first(name: "x-wns-deviceconnectionstatus") == "disconnected")

            let tile = try await wns.notify(channel, type: "wns/tile", xml: "<tile/>")
            #expect(tile.wnsStatus == "received")
            let uncachedTile = try await wns.notify(channel, type: "wns/tile", xml: "<tile/>", headers: [("x-wns-cache-policy", "no-cache")])
            #expect(uncachedTile.wnsStatus == "dropped")

            #expect(wns.emulator.notifications(for: channel).map { $0.headers["x-wns-type"] } == ["wns/raw", "wns/tile"])
            #expect(wns.emulator.acceptedCount == 2)

            wns.emulator.setConnected(true, channel: channel)
            let online = try await wns.notify(channel)
            #expect(online.wnsStatus == "received")
            #expect(online.headers.first(name: "x-wns-deviceconnectionstatus") == "connected")
        }
    }

    // MARK: - Control over HTTP

    @Test("control over HTTP: channels, connection, inbox, expiry, faults, stats", arguments: [true, false])
    func httpControl(http2: Bool) async throws {
        try await WNSHarness.with(httpVersion: http2 ? .automatic : .http1Only) { wns in
            let base = wns.emulator.baseURL + "/_emulator"
            let created = try await wns.client.send(.POST, base + "/channels")
            #expect(created.status == 200)
            #expect(created.version == (http2 ? .http2 : .http1_1))
            let channel = try #require(try created.json()["channel"] as? String)
            #expect(channel.hasPrefix(wns.emulator.baseURL + "/w/?token="))

            let unknownApp = try await wns.client.send(.POST, base + "/channels", body: #"{"clientID":"ms-app://nobody"}"#)
            #expect(unknownApp.status == 400)
            let viaDevices = try await wns.client.send(.POST, base + "/devices", body: #"{"topic":"\#(WNSHarness.clientID)"}"#)
            #expect((try viaDevices.json()["token"] as? String)?.hasPrefix(wns.emulator.baseURL + "/w/?token=") == true)

            #expect(try await wns.notify(channel).status == 200)
            var allowed = CharacterSet.alphanumerics
            allowed.insert(charactersIn: "-._~")
            let encoded = channel.addingPercentEncoding(withAllowedCharacters: allowed)!
            let inbox = try await wns.client.send(.GET, base + "/devices/\(encoded)/notifications")
            #expect(inbox.status == 200)
            let notifications = try inbox.decode([ReceivedNotification].self)
            #expect(notifications.map(\.payload) == [WNSHarness.toast])

            let offline = try await wns.client.send(
                .POST, base + "/channels/connection", body: #"{"channel":"\#(channel)","connected":false}"#)
            #expect(offline.status == 200)
            #expect(try await wns.notify(channel).wnsStatus == "dropped")
            let noSuchChannel = try await wns.client.send(
                .POST, base + "/channels/connection", body: #"{"channel":"https://x/w/?token=none","connected":false}"#)
            #expect(noSuchChannel.status == 404)

            let fault = try await wns.client.send(.POST, base + "/faults", body: #"{"status":503,"reason":"busy","count":1}"#)
            #expect(fault.status == 200)
            let expire = try await wns.client.send(.POST, base + "/devices/\(encoded)/unregister")
            #expect(expire.status == 200)
            #expect(try await wns.notify(channel).status == 410)

            let stats = try await wns.client.send(.GET, base + "/stats")
            #expect(try stats.json()["accepted"] as? Int == 1)
            #expect(try await wns.client.send(.GET, base + "/channels/nothing").status == 404)
        }
    }

    @Test("emulator credentials carry a stable WNS package SID and secret")
    func credentials() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-wns-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let first = try EmulatorCredentials.loadOrCreate(directory: directory)
        let again = try EmulatorCredentials.loadOrCreate(directory: directory)
        #expect(first.wnsPackageSID == again.wnsPackageSID)
        #expect(first.wnsClientSecret == again.wnsClientSecret)
        #expect(first.wnsApp == WNSEmulator.App(clientID: first.wnsPackageSID, clientSecret: first.wnsClientSecret))
        let parts = first.wnsPackageSID.dropFirst("ms-app://s-1-15-2-".count).split(separator: "-")
        #expect(first.wnsPackageSID.hasPrefix("ms-app://s-1-15-2-"))
        #expect(parts.count == 7 && parts.allSatisfy { UInt32($0) != nil })
        #expect(Data(base64Encoded: first.wnsClientSecret)?.count == 24)
        let other = try EmulatorCredentials.makeEphemeral()
        #expect(other.wnsPackageSID != first.wnsPackageSID)
        #expect(other.wnsClientSecret != first.wnsClientSecret)
    }
}
