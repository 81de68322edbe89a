import Foundation
import HeraldCore
import HeraldHubWire
import Testing

@Suite("Installation JSON Patch")
struct InstallationPatchTests {
    static let token = String(repeating: "0a1b2c3d", count: 8)

    static var base: Installation {
        Installation(
            id: "device-1",
            platform: .apns,
            pushChannel: token,
            userId: "alice",
            tags: ["sports", "news"],
            templates: [
                "greeting": InstallationTemplate(
                    body: #"{"aps":{"alert":"$(message)"}}"#,
                    headers: ["apns-priority": "10"],
                    expiry: "2030-01-01T00:00:00Z",
                    tags: ["hello"]
                )
            ],
            pushVariables: ["name": "Alice"]
        )
    }

    static func patched(_ patch: String, _ installation: Installation = base) throws -> Installation {
        try installation.applying(Data(patch.utf8))
    }

    static func expectRefused(
        _ patch: String,
        containing message: String,
        _ installation: Installation = base,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(sourceLocation: sourceLocation) {
            try patched(patch, installation)
        } throws: { error in
            guard let error = error as? HeraldError else { return false }
            return error.code == .badRequest && error.message.contains(message)
        }
    }

    // MARK: Tags

    @Test func addsTagsFromAnArrayOrAString() throws {
        let added = ["sports", "news", "weather"]
        #expect(try Self.patched(#"[{"op":"add","path":"/tags","value":["weather","news"]}]"#).tags == added)
        #expect(try Self.patched(#"[{"op":"add","path":"/tags","value":"weather"}]"#).tags == added)
        #expect(try Self.patched(#"[{"op":"add","path":"/tags/weather"}]"#).tags == added)
        #expect(try Self.patched(#"[{"op":"add","path":"/tags/news"}]"#).tags == ["sports", "news"])
        #expect(try Self.patched(#"[{"op":"add","path":"/tags/-","value":"weather"}]"#).tags == added)
        #expect(try Self.patched(#"[{"op":"add","path":"/tags/-"}]"#).tags == ["sports", "news", "-"])
    }

    @Test func splitsACommaSeparatedTagString() throws {
        // What callers of the .NET SDK's string-valued operations send when they mean two tags.
        #expect(try Self.patched(#"[{"op":"Replace","path":"/tags","value":"a, b,,c"}]"#).tags == ["a", "b", "c"])
        #expect(
            try Self.patched(#"[{"op":"add","path":"/tags","value":"sports,weather"}]"#).tags == [
                "sports", "news", "weather",
            ])
    }

    @Test func removesAndReplacesTags() throws {
        #expect(try Self.patched(#"[{"op":"remove","path":"/tags"}]"#).tags == [])
        #expect(try Self.patched(#"[{"op":"remove","path":"/tags/news","value":null}]"#).tags == ["sports"])
        #expect(try Self.patched(#"[{"op":"remove","path":"/tags/absent"}]"#).tags == ["sports", "news"])
        #expect(try Self.patched(#"[{"op":"replace","path":"/tags","value":["x"]}]"#).tags == ["x"])
        #expect(
            try Self.patched(#"[{"op":"replace","path":"/tags/news","value":"weather"}]"#).tags == [
                "sports", "weather",
            ])
    }

    @Test func refusesInvalidTags() {
        Self.expectRefused(
            #"[{"op":"add","path":"/tags","value":["bad tag"]}]"#,
            containing: "after the patch, tags[2]: tag 'bad tag' is invalid")
        Self.expectRefused(
            #"[{"op":"add","path":"/tags","value":42}]"#,
            containing: "'value' must be an array of tags or a comma-separated string")
        Self.expectRefused(
            #"[{"op":"add","path":"/tags"}]"#, containing: "patch operation 0 (add /tags): 'value' is required")
        let many = (0..<60).map { "\"t\($0)\"" }.joined(separator: ",")
        Self.expectRefused(
            #"[{"op":"add","path":"/tags","value":[\#(many)]}]"#,
            containing: "after the patch, tags: at most 60 tags; 62 were given")
    }

    // MARK: Scalars

    @Test func setsAndRemovesTheUserId() throws {
        #expect(try Self.patched(#"[{"op":"add","path":"/userId","value":"bob"}]"#).userId == "bob")
        #expect(try Self.patched(#"[{"op":"replace","path":"/userid","value":"bob"}]"#).userId == "bob")
        #expect(try Self.patched(#"[{"op":"remove","path":"/userId"}]"#).userId == nil)
        Self.expectRefused(
            #"[{"op":"add","path":"/userId","value":"b o b"}]"#, containing: "after the patch, userId: 'b o b'")
        Self.expectRefused(#"[{"op":"add","path":"/userId","value":7}]"#, containing: "'value' must be a string")
    }

    @Test func replacesThePushChannelAndClearsExpiry() throws {
        var expired = Self.base
        expired.pushChannelExpired = true
        let newToken = String(repeating: "FF", count: 32)
        let result = try Self.patched(#"[{"op":"replace","path":"/pushChannel","value":"\#(newToken)"}]"#, expired)
        #expect(result.pushChannel == newToken.lowercased())
        #expect(!result.pushChannelExpired)
        Self.expectRefused(#"[{"op":"remove","path":"/pushChannel"}]"#, containing: "the push channel is required")
        Self.expectRefused(
            #"[{"op":"add","path":"/pushChannel","value":"xyz"}]"#,
            containing: "after the patch, pushChannel: an APNs device token is hexadecimal")
    }

    @Test func replacesABrowserPushChannel() throws {
        let browser = Installation(
            id: "web",
            platform: .webpush,
            pushChannel: "https://push.example/old",
            webPushKeys: WebPushKeys(p256dh: "p", auth: "a")
        )
        let object = try Self.patched(
            #"[{"op":"add","path":"/pushChannel","value":{"endpoint":"https://push.example/new","p256dh":"p2","auth":"a2"}}]"#,
            browser
        )
        #expect(object.pushChannel == "https://push.example/new")
        #expect(object.webPushKeys == WebPushKeys(p256dh: "p2", auth: "a2"))
        let string = try Self.patched(
            #"[{"op":"add","path":"/pushChannel","value":"{\"endpoint\":\"https://push.example/s\",\"p256dh\":\"p3\",\"auth\":\"a3\"}"}]"#,
            browser
        )
        #expect(string.webPushKeys == WebPushKeys(p256dh: "p3", auth: "a3"))
        let endpointOnly = try Self.patched(
            #"[{"op":"add","path":"/pushChannel","value":"https://push.example/e"}]"#, browser)
        #expect(endpointOnly.pushChannel == "https://push.example/e")
        #expect(endpointOnly.webPushKeys == WebPushKeys(p256dh: "p", auth: "a"))
    }

    @Test func setsAndRemovesTheExpirationTime() throws {
        let set = try Self.patched(#"[{"op":"add","path":"/expirationTime","value":"2030-01-01T00:00:00Z"}]"#)
        #expect(set.expirationTime == Date(timeIntervalSince1970: 1_893_456_000))
        #expect(try Self.patched(#"[{"op":"remove","path":"/expirationTime"}]"#, set).expirationTime == nil)
        Self.expectRefused(
            #"[{"op":"add","path":"/expirationTime","value":"soon"}]"#, containing: "value: expected an ISO 8601 date")
    }

    // MARK: Templates

    @Test func addsAWholeTemplateAsAnObjectOrAJSONString() throws {
        let object = try Self.patched(
            #"[{"op":"add","path":"/templates/news","value":{"body":"{\"aps\":{}}","headers":{"apns-push-type":"alert"},"tags":["n"]}}]"#
        )
        #expect(
            object.templates["news"]
                == InstallationTemplate(body: #"{"aps":{}}"#, headers: ["apns-push-type": "alert"], tags: ["n"]))
        #expect(object.templates["greeting"] == Self.base.templates["greeting"])

        // The .NET SDK's operations carry every value as a string.
        let string = try Self.patched(
            #"[{"op":"Add","path":"/templates/news","value":"{\"body\":\"{}\",\"tags\":[\"n\"]}"}]"#
        )
        #expect(string.templates["news"] == InstallationTemplate(body: "{}", tags: ["n"]))
    }

    @Test func escapesTemplateNamesAsJSONPointers() throws {
        let result = try Self.patched(#"[{"op":"add","path":"/templates/a~1b~0c","value":{"body":"{}"}}]"#)
        #expect(result.templates["a/b~c"]?.body == "{}")
        Self.expectRefused(
            #"[{"op":"add","path":"/templates/a~2b","value":{"body":"{}"}}]"#, containing: "'~' must be followed by 0")
    }

    @Test func patchesTemplateFields() throws {
        let body = try Self.patched(
            #"[{"op":"replace","path":"/templates/greeting/body","value":"{\"aps\":{\"badge\":1}}"}]"#)
        #expect(body.templates["greeting"]?.body == #"{"aps":{"badge":1}}"#)

        let headers = try Self.patched(
            #"[{"op":"add","path":"/templates/greeting/headers","value":"{\"apns-push-type\":\"background\"}"}]"#)
        #expect(headers.templates["greeting"]?.headers == ["apns-push-type": "background"])
        let oneHeader = try Self.patched(
            #"[{"op":"add","path":"/templates/greeting/headers/apns-expiration","value":"0"}]"#)
        #expect(oneHeader.templates["greeting"]?.headers == ["apns-priority": "10", "apns-expiration": "0"])
        let noHeaders = try Self.patched(#"[{"op":"remove","path":"/templates/greeting/headers"}]"#)
        #expect(noHeaders.templates["greeting"]?.headers == [:])

        let expiry = try Self.patched(#"[{"op":"remove","path":"/templates/greeting/expiry"}]"#)
        #expect(expiry.templates["greeting"]?.expiry == nil)

        let tags = try Self.patched(
            #"[{"op":"add","path":"/templates/greeting/tags","value":"a,b"},{"op":"remove","path":"/templates/greeting/tags/hello"}]"#
        )
        #expect(tags.templates["greeting"]?.tags == ["a", "b"])

        let removed = try Self.patched(#"[{"op":"remove","path":"/templates/greeting"}]"#)
        #expect(removed.templates.isEmpty)
        #expect(try Self.patched(#"[{"op":"remove","path":"/templates/absent"}]"#).templates.count == 1)
        #expect(try Self.patched(#"[{"op":"remove","path":"/templates"}]"#).templates.isEmpty)
    }

    @Test func refusesTemplateMistakes() {
        Self.expectRefused(
            #"[{"op":"add","path":"/templates/absent/body","value":"{}"}]"#,
            containing: "there is no template named 'absent'")
        Self.expectRefused(
            #"[{"op":"remove","path":"/templates/greeting/body"}]"#, containing: "a template's body is required")
        Self.expectRefused(
            #"[{"op":"add","path":"/templates/x","value":"not json"}]"#, containing: "'value' must be a template")
        Self.expectRefused(
            #"[{"op":"add","path":"/templates/x","value":{"headers":{}}}]"#, containing: "value.body: required")
        Self.expectRefused(
            #"[{"op":"add","path":"/templates/$body","value":{"body":"{}"}}]"#, containing: "'$body' is reserved")
        Self.expectRefused(
            #"[{"op":"add","path":"/templates/greeting/priority","value":"10"}]"#,
            containing: "a template's patchable fields are")
    }

    // MARK: Push variables

    @Test func patchesPushVariables() throws {
        #expect(
            try Self.patched(#"[{"op":"add","path":"/pushVariables/city","value":"Oslo"}]"#).pushVariables == [
                "name": "Alice", "city": "Oslo",
            ])
        #expect(try Self.patched(#"[{"op":"remove","path":"/pushVariables/name"}]"#).pushVariables == [:])
        #expect(
            try Self.patched(#"[{"op":"replace","path":"/pushVariables","value":{"a":"1"}}]"#).pushVariables == [
                "a": "1"
            ])
        #expect(
            try Self.patched(#"[{"op":"add","path":"/pushVariables","value":"{\"b\":\"2\"}"}]"#).pushVariables == [
                "b": "2"
            ])
        #expect(try Self.patched(#"[{"op":"remove","path":"/pushVariables"}]"#).pushVariables == [:])
        Self.expectRefused(
            #"[{"op":"add","path":"/pushVariables/bad-name","value":"x"}]"#,
            containing: "pushVariables.bad-name: a variable name")
    }

    // MARK: Unsupported

    static let unsupported: [(patch: String, message: String)] = [
        (
            #"[{"op":"move","from":"/tags/a","path":"/tags/b"}]"#,
            "patch operation 0 (move /tags/b): the operation 'move' is not supported; use add, remove or replace"
        ),
        (#"[{"op":"copy","from":"/userId","path":"/tags/x"}]"#, "the operation 'copy' is not supported"),
        (#"[{"op":"test","path":"/userId","value":"alice"}]"#, "the operation 'test' is not supported"),
        (#"[{"op":"merge","path":"/userId","value":"x"}]"#, "unknown operation 'merge'"),
        (#"[{"path":"/userId","value":"x"}]"#, "'op' is required"),
        (#"[{"op":"add","value":"x"}]"#, "'path' is required"),
        (#"[{"op":"add","path":"userId","value":"x"}]"#, "a path is a JSON Pointer starting with '/'"),
        (#"[{"op":"add","path":"/nickname","value":"x"}]"#, "patch operation 0 (add /nickname): unsupported path"),
        (#"[{"op":"add","path":"/userId/first","value":"x"}]"#, "unsupported path"),
        (#"[{"op":"add","path":"/tags/a/b","value":"x"}]"#, "a tag is addressed as /tags/{tag}"),
        (#"[{"op":"replace","path":"/installationId","value":"x"}]"#, "'installationId' cannot be changed by a patch"),
        (#"[{"op":"replace","path":"/platform","value":"wns"}]"#, "'platform' cannot be changed by a patch"),
        (#"[{"op":"replace","path":"/pushChannelExpired","value":false}]"#, "'pushChannelExpired' is read-only"),
        (
            #"[{"op":"add","path":"/secondaryTiles/tile/pushChannel","value":"x"}]"#,
            "secondary tiles (WNS) are not supported"
        ),
        (#"[{"op":"add","path":"","value":{}}]"#, "a path is a JSON Pointer starting with '/'"),
        (#"[{"op":"add","path":"/userId","value":"ok"},42]"#, "patch operation 1: expected an operation"),
        (#""add""#, "the patch must be a JSON array of operations"),
        ("[{", "the patch is not valid JSON"),
    ]

    @Test(arguments: unsupported)
    func refusesUnsupportedOperationsAndPaths(_ example: (patch: String, message: String)) {
        Self.expectRefused(example.patch, containing: example.message)
    }

    @Test func appliesOperationsInOrderAndAcceptsASingleOperationObject() throws {
        let result = try Self.patched(
            #"[{"op":"remove","path":"/tags"},{"op":"add","path":"/tags/a"},{"op":"add","path":"/tags/b"},{"op":"remove","path":"/tags/a"}]"#
        )
        #expect(result.tags == ["b"])
        #expect(try Self.patched(#"{"op":"add","path":"/userId","value":"solo"}"#).userId == "solo")
        let base = Self.base
        #expect(try Self.patched("[]", base) == base)
    }
}
