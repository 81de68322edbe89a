import AsyncHTTPClient
import Foundation
import HeraldCore
import HeraldEmulator
import NIOHTTP1
import Testing
import _CryptoExtras

@Suite("FCM emulator")
struct FCMEmulatorTests {
    // MARK: - Token endpoint

    @Test("a good assertion gets a bearer token for an hour")
    func tokenEndpoint() async throws {
        try await FCMHarness.with { fcm in
            #expect(fcm.emulator.tokenURI == fcm.emulator.baseURL + "/token")
            let response = try await fcm.requestToken(form: FCMHarness.form(assertion: try fcm.assertion()))
            #expect(response.status == 200)
            #expect(response.version == .http2)
            let json = try response.json()
            #expect((json["access_token"] as? String)?.isEmpty == false)
            #expect(json["expires_in"] as? Int == 3600)
            #expect(json["token_type"] as? String == "Bearer")
        }
    }

    enum BadAssertion: String, CaseIterable, CustomTestStringConvertible {
        case unknownIssuer, wrongKey, wrongAudience, missingScope, otherScope, tooLong, expired, issuedInFuture
        case algHS256, malformed, missingExp, wrongGrantType, missingAssertion
        var testDescription: String { rawValue }
    }

    @Test("bad assertions get Google's OAuth errors", arguments: BadAssertion.allCases)
    func badAssertion(_ kind: BadAssertion) async throws {
        try await FCMHarness.with { fcm in
            let now = Int(fcm.clock.now.timeIntervalSince1970)
            var expected = "invalid_grant"
            let form: String
            switch kind {
            case .unknownIssuer:
                form = FCMHarness.form(assertion: try fcm.assertion(claims: fcm.claims(["iss": "nobody@example.com"])))
            case .wrongKey:
                form = FCMHarness.form(assertion: try fcm.assertion(key: TestSupport.otherRSAKey))
            case .wrongAudience:
                form = FCMHarness.form(assertion: try fcm.assertion(claims: fcm.claims(["aud": "https://oauth2.googleapis.com/token"])))
            case .missingScope:
                var claims = fcm.claims()
                claims["scope"] = nil
                form = FCMHarness.form(assertion: try fcm.assertion(claims: claims))
            case .otherScope:
                expected = "invalid_scope"
                form = FCMHarness.form(
                    assertion: try fcm.assertion(claims: fcm.claims(["scope": "https://www.googleapis.com/auth/cloud-platform"]))
                )
            case .tooLong:
                form = FCMHarness.form(assertion: try fcm.assertion(claims: fcm.claims(["exp": now + 3601])))
            case .expired:
                form = FCMHarness.form(assertion: try fcm.assertion(claims: fcm.claims(["iat": now - 4000, "exp": now - 400])))
            case .issuedInFuture:
                form = FCMHarness.form(assertion: try fcm.assertion(claims: fcm.claims(["iat": now + 600, "exp": now + 3000])))
            case .algHS256:
                form = FCMHarness.form(assertion: try fcm.assertion(header: ["alg": "HS256", "typ": "JWT"]))
            case .malformed:
                form = FCMHarness.form(assertion: "a.b")
            case .missingExp:
                var claims = fcm.claims()
                claims["exp"] = nil
                form = FCMHarness.form(assertion: try fcm.assertion(claims: claims))
            case .wrongGrantType:
                expected = "unsupported_grant_type"
                form = FCMHarness.form(assertion: try fcm.assertion(), grantType: "client_credentials")
            case .missingAssertion:
                expected = "invalid_request"
                form = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer"
            }
            let response = try await fcm.requestToken(form: form)
            #expect(response.status == 400)
            let json = try response.json()
            #expect(json["error"] as? String == expected)
            #expect((json["error_description"] as? String)?.isEmpty == false)
        }
    }

    // MARK: - messages:send

    @Test("a valid message is accepted and recorded as the message JSON")
    func sendOK() async throws {
        try await FCMHarness.with { fcm in
            let token = fcm.emulator.registerDevice()
            let message: [String: Any] = [
                "token": token,
                "notification": ["title": "Hi", "body": "There"],
                "data": ["id": "42", "kind": "secure"],
                "android": ["priority": "high"],
            ]
            let response = try await fcm.sendMessage(message)
            #expect(response.status == 200)
            #expect(response.version == .http2)
            let name = try #require(try response.json()["name"] as? String)
            #expect(name.hasPrefix("projects/\(FCMHarness.projectID)/messages/"))

            let inbox = fcm.emulator.notifications(for: token)
            #expect(inbox.count == 1)
            let received = try #require(inbox.first)
            #expect(received.id == name)
            #expect(received.headers.isEmpty)
            #expect(received.receivedAt == fcm.clock.now)
            let recorded = try JSONDecoder().decode(JSONValue.self, from: Data(received.payload.utf8))
            let sent = try JSONDecoder().decode(JSONValue.self, from: try JSONSerialization.data(withJSONObject: message))
            #expect(recorded == sent)
            #expect(fcm.emulator.acceptedCount == 1)
        }
    }

    @Test("validate_only checks the message without delivering it")
    func validateOnly() async throws {
        try await FCMHarness.with { fcm in
            let token = fcm.emulator.registerDevice()
            let authorization = "Bearer " + (try await fcm.accessToken())
            let ok = try await fcm.sendRaw(#"{"validate_only":true,"message":{"token":"\#(token)"}}"#, authorization: authorization)
            #expect(ok.status == 200)
            #expect(try ok.json()["name"] as? String == "projects/\(FCMHarness.projectID)/messages/fake_message_id")
            let bad = try await fcm.sendRaw(#"{"validate_only":true,"message":{"token":"\#(token)","data":{"a":1}}}"#, authorization: authorization)
            #expect(bad.status == 400)
            #expect(fcm.emulator.notifications(for: token).isEmpty)
            #expect(fcm.emulator.acceptedCount == 0)
        }
    }

    @Test("registered tokens look like FCM's")
    func tokenShape() async throws {
        try await FCMHarness.with { fcm in
            let token = fcm.emulator.registerDevice()
            #expect((150...170).contains(token.count))
            #expect(token.contains(":APA91b"))
            let allowed = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_:-")
            #expect(token.allSatisfy { allowed.contains($0) })
            #expect(fcm.emulator.registerDevice() != token)
        }
    }

    @Test("topic messages are accepted and kept under /topics/{name}")
    func topicMessage() async throws {
        try await FCMHarness.with { fcm in
            let response = try await fcm.sendMessage(["topic": "news", "data": ["a": "b"]])
            #expect(response.status == 200)
            #expect(fcm.emulator.notifications(for: "/topics/news").count == 1)
        }
    }

    @Test("an unknown token is 400 INVALID_ARGUMENT unless the registry is open")
    func unknownToken() async throws {
        let unknown = "abc:APA91b" + String(repeating: "x", count: 140)
        try await FCMHarness.with { fcm in
            let response = try await fcm.sendMessage(["token": unknown])
            #expect(response.status == 400)
            let error = try response.googleError()
            #expect(error.code == 400)
            #expect(error.status == "INVALID_ARGUMENT")
            #expect(error.errorCode == "INVALID_ARGUMENT")
        }
        try await FCMHarness.with(configure: { $0.openDeviceRegistry = true }) { fcm in
            #expect(try await fcm.sendMessage(["token": unknown]).status == 200)
            let malformed = try await fcm.sendMessage(["token": "has spaces in it"])
            #expect(malformed.status == 400)
        }
    }

    @Test("an unregistered token is 404 NOT_FOUND / UNREGISTERED")
    func unregistered() async throws {
        try await FCMHarness.with { fcm in
            let token = fcm.emulator.registerDevice()
            fcm.emulator.unregister(token: token)
            let response = try await fcm.sendMessage(["token": token])
            #expect(response.status == 404)
            let error = try response.googleError()
            #expect(error.status == "NOT_FOUND")
            #expect(error.errorCode == "UNREGISTERED")
        }
    }

    @Test("another project is 403 PERMISSION_DENIED / SENDER_ID_MISMATCH")
    func wrongProject() async throws {
        try await FCMHarness.with { fcm in
            let token = fcm.emulator.registerDevice()
            let response = try await fcm.sendMessage(["token": token], project: "someone-else")
            #expect(response.status == 403)
            let error = try response.googleError()
            #expect(error.status == "PERMISSION_DENIED")
            #expect(error.errorCode == "SENDER_ID_MISMATCH")
        }
    }

    @Test("missing, unknown and expired access tokens are 401 UNAUTHENTICATED")
    func unauthenticated() async throws {
        try await FCMHarness.with { fcm in
            let token = fcm.emulator.registerDevice()
            let body = #"{"message":{"token":"\#(token)"}}"#
            for authorization in [nil, "Bearer made-up", "Basic abc"] {
                let response = try await fcm.sendRaw(body, authorization: authorization)
                #expect(response.status == 401)
                #expect(try response.googleError().status == "UNAUTHENTICATED")
            }
            let accessToken = try await fcm.accessToken()
            #expect(try await fcm.sendRaw(body, authorization: "Bearer " + accessToken).status == 200)
            fcm.clock.advance(by: 3599)
            #expect(try await fcm.sendRaw(body, authorization: "Bearer " + accessToken).status == 200)
            fcm.clock.advance(by: 2)
            let expired = try await fcm.sendRaw(body, authorization: "Bearer " + accessToken)
            #expect(expired.status == 401)
            #expect(try expired.googleError().status == "UNAUTHENTICATED")
        }
    }

    enum BadBody: String, CaseIterable, CustomTestStringConvertible {
        case notJSON, noMessage, messageNotObject, noTarget, twoTargets, dataNumber, dataNotObject, tooBig, emptyToken
        var testDescription: String { rawValue }
    }

    @Test("bad bodies are 400 INVALID_ARGUMENT", arguments: BadBody.allCases)
    func badBody(_ kind: BadBody) async throws {
        try await FCMHarness.with { fcm in
            let token = fcm.emulator.registerDevice()
            let body: String
            switch kind {
            case .notJSON: body = "message: hello"
            case .noMessage: body = #"{"token":"\#(token)"}"#
            case .messageNotObject: body = #"{"message":"hi"}"#
            case .noTarget: body = #"{"message":{"data":{"a":"b"}}}"#
            case .twoTargets: body = #"{"message":{"token":"\#(token)","topic":"news"}}"#
            case .dataNumber: body = #"{"message":{"token":"\#(token)","data":{"a":1}}}"#
            case .dataNotObject: body = #"{"message":{"token":"\#(token)","data":["a"]}}"#
            case .tooBig:
                body = #"{"message":{"token":"\#(token)","data":{"a":"\#(String(repeating: "x", count: 4000))"}}}"#
            case .emptyToken: body = #"{"message":{"token":""}}"#
            }
            let response = try await fcm.sendRaw(body, authorization: "Bearer " + (try await fcm.accessToken()))
            #expect(response.status == 400)
            let error = try response.googleError()
            #expect(error.status == "INVALID_ARGUMENT")
            #expect(fcm.emulator.acceptedCount == 0)
        }
    }

    @Test(
        "injected faults use FCM's codes and Retry-After",
        arguments: [
            (Fault.throttled, 429, "RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED"),
            (Fault.unavailable, 503, "UNAVAILABLE", "UNAVAILABLE"),
            (Fault.internalError, 500, "INTERNAL", "INTERNAL"),
        ]
    )
    func faults(_ fault: Fault, _ code: Int, _ status: String, _ errorCode: String) async throws {
        try await FCMHarness.with { fcm in
            let token = fcm.emulator.registerDevice()
            let accessToken = try await fcm.accessToken()
            fcm.emulator.injectFaults(fault.withRetryAfter(10), count: 1)
            let response = try await fcm.sendMessage(["token": token], accessToken: accessToken)
            #expect(response.status == code)
            #expect(response.headers.first(name: "retry-after") == "10")
            let error = try response.googleError()
            #expect(error.code == code)
            #expect(error.status == status)
            #expect(error.errorCode == errorCode)
            #expect(try await fcm.sendMessage(["token": token], accessToken: accessToken).status == 200)
            #expect(fcm.emulator.notifications(for: token).count == 1)
        }
    }
}
