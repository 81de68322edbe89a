import Foundation
import HeraldCore
import HeraldTestSupport
import Testing

/// Expressions in JSON bodies, and the plain-text form for headers.
@Suite("Notification templates: expressions and JSON")
struct NotificationTemplateTests {
    /// Parses a rendered JSON document; fails the test when it is not JSON.
    static func json(_ text: String) throws -> [String: Any] {
        let object = try JSONSerialization.jsonObject(with: Data(text.utf8), options: [])
        return try #require(object as? [String: Any], "not a JSON object: \(text)")
    }

    /// Renders `{"v": "<value>"}` and returns what `v` holds.
    static func renderValue(_ value: String, _ properties: [String: String]) throws -> Any? {
        let encodedValue = String(decoding: try JSONEncoder().encode(value), as: UTF8.self)
        let template = try NotificationTemplate(body: #"{"v":"# + encodedValue + "}")
        return try json(template.render(properties))["v"]
    }

    static func renderString(_ value: String, _ properties: [String: String]) throws -> String? {
        try renderValue(value, properties) as? String
    }

    // MARK: Expression forms

    @Test func apnsAlertWithValueAndBadge() throws {
        let template = try NotificationTemplate(body: ##"{"aps":{"alert":"$(message)","badge":"#(count)","sound":"default"}}"##)
        #expect(template.format == .json)
        #expect(template.propertyNames == ["message", "count"])
        let rendered = template.render(["message": "Hello!", "count": "3"])
        #expect(rendered == #"{"aps":{"alert":"Hello!","badge":3,"sound":"default"}}"#)
    }

    @Test func fcmV1MessageKeepsKeyOrderAndSpacing() throws {
        let body = """
            {
              "message": {
                "notification": { "title": "$(title)", "body": "{'From ' + $(sender) + ': ' + $(text)}" },
                "data": { "zeta": "1", "alpha": "%(link)", "count": "#(n)" },
                "android": { "priority": "high", "ttl": "3600s" }
              }
            }
            """
        let template = try NotificationTemplate(body: body)
        let rendered = template.render(["title": "News", "sender": "Ann", "text": "hi", "link": "a b/c", "n": "12"])
        let expected = """
            {
              "message": {
                "notification": { "title": "News", "body": "From Ann: hi" },
                "data": { "zeta": "1", "alpha": "a%20b%2Fc", "count": 12 },
                "android": { "priority": "high", "ttl": "3600s" }
              }
            }
            """
        #expect(rendered == expected)
    }

    @Test func textAroundExpressionsIsKept() throws {
        #expect(try Self.renderString("Hi $(name), you have $(n) new", ["name": "Ann", "n": "2"]) == "Hi Ann, you have 2 new")
    }

    @Test func missingPropertiesRenderEmpty() throws {
        #expect(try Self.renderString("[$(a)|$(b,3)|.(c,5)|%(d)|#(e)]", [:]) == "[||||]")
        #expect(try Self.renderValue("#(e)", [:]) as? String == "")
        #expect(try Self.renderString("{'x' + $(missing) + 'y'}", [:]) == "xy")
    }

    @Test func propertyNamesAreCaseInsensitive() throws {
        let template = try NotificationTemplate(body: #"{"a":"$(UserName)","b":"$(username)","c":"$(USERNAME,2)"}"#)
        #expect(template.propertyNames == ["username"])
        for key in ["username", "USERNAME", "UserName", "uSeRnAmE"] {
            let rendered = try Self.json(template.render([key: "Ann"]))
            #expect(rendered["a"] as? String == "Ann", "key \(key)")
            #expect(rendered["b"] as? String == "Ann", "key \(key)")
            #expect(rendered["c"] as? String == "An", "key \(key)")
        }
    }

    @Test func keysDifferingOnlyInCaseResolveTheSameWayEveryTime() throws {
        // The first key in code-point order wins ("NAME" < "Name" < "name").
        let template = try NotificationTemplate(body: #"{"a":"$(name)"}"#)
        for _ in 0..<20 {
            let rendered = try Self.json(template.render(["name": "lower", "Name": "title", "NAME": "upper"]))
            #expect(rendered["a"] as? String == "upper")
        }
    }

    // MARK: Clipping

    @Test(arguments: [
        (0, ""), (1, "H"), (4, "Hell"), (5, "Hello"), (6, "Hello"), (100, "Hello"),
    ])
    func clipsToNCharacters(n: Int, expected: String) throws {
        #expect(try Self.renderString("$(v,\(n))", ["v": "Hello"]) == expected)
        #expect(try Self.renderString("$( v , \(n) )", ["v": "Hello"]) == expected)
    }

    @Test(arguments: [
        // Fits: unchanged, no dots.
        (22, "This is the title line"), (30, "This is the title line"),
        // Cut: the whole is exactly n characters, the last three of them dots.
        (21, "This is the title ..."), (20, "This is the title..."), (4, "T..."),
        // No room for text before the dots: clipped without them.
        (3, "Thi"), (2, "Th"), (1, "T"), (0, ""),
    ])
    func clipsWithEllipsis(n: Int, expected: String) throws {
        let rendered = try #require(try Self.renderString(".(title, \(n))", ["title": "This is the title line"]))
        #expect(rendered == expected)
        #expect(rendered.count <= n)
    }

    @Test func clippingCountsCharactersNotBytes() throws {
        // "é" as one scalar, the flag as two scalars, the family as seven: one character each.
        let value = "é🇫🇷👨‍👩‍👧‍👦xyz"
        #expect(try Self.renderString("$(v,3)", ["v": value]) == "é🇫🇷👨‍👩‍👧‍👦")
        #expect(try Self.renderString(".(v,5)", ["v": value]) == "é🇫🇷...")
        #expect(try Self.renderString(".(v,6)", ["v": value]) == value)
    }

    // MARK: URI encoding

    @Test func uriEncodingKeepsOnlyUnreservedCharacters() throws {
        #expect(try Self.renderString("%(v)", ["v": "AZaz09-._~"]) == "AZaz09-._~")
        #expect(try Self.renderString("%(v)", ["v": "a b&c=d/e?f#g+h%i"]) == "a%20b%26c%3Dd%2Fe%3Ff%23g%2Bh%25i")
        #expect(try Self.renderString("%(v)", ["v": "!*'()"]) == "%21%2A%27%28%29")
    }

    @Test func uriEncodingEncodesNonASCIIAsUTF8() throws {
        #expect(try Self.renderString("%(v)", ["v": "Zoë"]) == "Zo%C3%AB")
        #expect(try Self.renderString("%(v)", ["v": "東京"]) == "%E6%9D%B1%E4%BA%AC")
        #expect(try Self.renderString("%(v)", ["v": "😀"]) == "%F0%9F%98%80")
        #expect(try Self.renderString("https://x.test/?q=%(v)", ["v": "ü ü"]) == "https://x.test/?q=%C3%BC%20%C3%BC")
    }

    // MARK: #() numbers

    @Test(arguments: ["0", "7", "42", "-1", "3.25", "-0.5", "1e3", "2E-2", "6.02e+23"])
    func hashEmitsBareNumbers(value: String) throws {
        let template = try NotificationTemplate(body: ##"{"badge":"#(n)"}"##)
        let rendered = template.render(["n": value])
        #expect(rendered == #"{"badge":"# + value + "}")
        let parsed = try Self.json(rendered)
        #expect(parsed["badge"] != nil)
        #expect(!(parsed["badge"] is String))
    }

    @Test(arguments: ["", "abc", "007", "1.", ".5", "+1", "1e", "0x10", " 7", "7 ", "1,5", "NaN", "Infinity", "1e999", "true"])
    func hashEmitsStringsForNonNumbers(value: String) throws {
        #expect(try Self.renderValue("#(n)", ["n": value]) as? String == value)
    }

    @Test func hashIsNumericOnlyAsTheWholeValue() throws {
        #expect(try Self.renderValue(" #(n)", ["n": "7"]) as? String == " 7")
        #expect(try Self.renderValue("#(n)!", ["n": "7"]) as? String == "7!")
        #expect(try Self.renderValue("{#(n)}", ["n": "7"]) as? String == "7")
        #expect(try Self.renderValue("{#(n) + '0'}", ["n": "7"]) as? String == "70")
        #expect(try Self.renderValue("#( n )", ["n": "7"]) as? Int == 7)
    }

    @Test func hashWorksInArrays() throws {
        let template = try NotificationTemplate(body: ##"["#(a)", "#(b)", "$(a)"]"##)
        #expect(template.render(["a": "1", "b": "x"]) == #"[1, "x", "1"]"#)
    }

    // MARK: Literals and concatenation

    @Test func literalsWithBothQuoteKinds() throws {
        #expect(try Self.renderString("{'Hi, ' + $(name) + \"!\"}", ["name": "Ann"]) == "Hi, Ann!")
        #expect(try Self.renderString("{\"It's \" + $(name)}", ["name": "Ann"]) == "It's Ann")
        #expect(try Self.renderString("{'Say \"' + $(w) + '\"'}", ["w": "hi"]) == "Say \"hi\"")
        // A quote doubled inside a literal stands for itself.
        #expect(try Self.renderString("{'it''s' + \" \"\"q\"\"\"}", [:]) == "it's \"q\"")
    }

    @Test func concatenationJoinsEveryForm() throws {
        let value = "{$(a) + ' - ' + $(b,2) + .(c,4) + %(d) + #(e)}"
        #expect(try Self.renderString(value, ["a": "A", "b": "Bbb", "c": "Ccccc", "d": "d d", "e": "5"]) == "A - BbC...d%20d5")
        // Blocks may sit inside text, several per value, with any spacing.
        #expect(try Self.renderString("<{ 'x'+$(a) }|{$(a)+'y'}>", ["a": "1"]) == "<x1|1y>")
    }

    @Test func aBraceThatStartsNoBlockIsText() throws {
        // Embedded JSON keeps its braces; the expression inside still renders.
        #expect(try Self.renderString(#"{"id":"$(id)","n":1}"#, ["id": "42"]) == #"{"id":"42","n":1}"#)
        #expect(try Self.renderString("{}", [:]) == "{}")
        #expect(try Self.renderString("{ }", [:]) == "{ }")
        #expect(try Self.renderString("{'unclosed' + $(a)", ["a": "1"]) == "{'unclosed' + 1")
        #expect(try Self.renderString("{$(a) $(a)}", ["a": "1"]) == "{1 1}")
        #expect(try Self.renderString("{'a' + }", [:]) == "{'a' + }")
        #expect(try Self.renderString("{{'a'}}", [:]) == "{a}")
    }

    @Test func sigilsWithoutParenthesisAreText() throws {
        #expect(try Self.renderString("$5 and 10% off. #1 $name", [:]) == "$5 and 10% off. #1 $name")
        #expect(try Self.renderString("'quoted' \"text\"", [:]) == "'quoted' \"text\"")
        #expect(try Self.renderString("(a) + (b)", [:]) == "(a) + (b)")
    }

    @Test func aLiteralWritesExpressionSyntaxAsText() throws {
        #expect(try Self.renderString("{'$(' + 'name)'}", ["name": "Ann"]) == "$(name)")
    }

    @Test func expressionsAreReadAfterJSONEscapes() throws {
        // \u0024 is "$": the value is the expression $(a).
        let template = try NotificationTemplate(body: #"{"v":"\u0024(a)","w":"{\"x\" + $(a)}"}"#)
        let rendered = try Self.json(template.render(["a": "1"]))
        #expect(rendered["v"] as? String == "1")
        #expect(rendered["w"] as? String == "x1")
    }

    @Test func keysAreNeverEvaluated() throws {
        let template = try NotificationTemplate(body: #"{"$(a)":"$(a)"}"#)
        #expect(template.render(["a": "1"]) == #"{"$(a)":"1"}"#)
    }

    @Test func valuesWithoutExpressionsAreCopiedAsWritten() throws {
        let body = #"{"a":"\u00e9\/x","b":[1.50,true,null,-0,2E+3],"c":{}}"#
        let template = try NotificationTemplate(body: body)
        #expect(template.propertyNames.isEmpty)
        #expect(template.render(["a": "ignored"]) == body)
    }

    // MARK: Escaping

    @Test func valuesAreEscapedForJSON() throws {
        let hostile = "quote \" backslash \\ slash / newline \n tab \t cr \r nul \u{0} bell \u{7} <b>&amp; é 😀"
        let template = try NotificationTemplate(body: ##"{"a":"$(v)","b":"#(v)","c":"{'<' + $(v) + '>'}"}"##)
        let rendered = template.render(["v": hostile])
        let parsed = try Self.json(rendered)
        #expect(parsed["a"] as? String == hostile)
        #expect(parsed["b"] as? String == hostile)
        #expect(parsed["c"] as? String == "<" + hostile + ">")
        #expect(!rendered.contains("\n"))
    }

    @Test func literalsAreEscapedForJSON() throws {
        // The literal holds a quote and a backslash once JSON escapes are undone.
        let template = try NotificationTemplate(body: #"{"a":"{'say \"hi\" \\ ' + $(v)}"}"#)
        #expect(try Self.json(template.render(["v": "x"]))["a"] as? String == #"say "hi" \ x"#)
    }

    // MARK: Errors

    @Test(arguments: [
        ("$(first name)", "a property name may contain only letters"),
        ("$(na-me)", "a property name may contain only letters"),
        ("$(naïve)", "a property name may contain only letters"),
        ("$()", "a property name is missing"),
        ("$(,3)", "a property name is missing"),
        ("$(name", "it is not closed with ')'"),
        ("x $(", "a property name and ')' are missing"),
        ("$(name,)", "a length (a whole number such as 20) must follow ','"),
        ("$(name,-1)", "a length (a whole number such as 20) must follow ','"),
        ("$(name,3x)", "the length must be a whole number such as 20, followed by ')'"),
        ("$(name,3,4)", "the length must be a whole number such as 20, followed by ')'"),
        ("$(name,9999999999)", "the length is larger than 999999999"),
        (".(name)", "'.(' needs a length, as in .(name, 20)"),
        ("%(name,3)", "'%(' takes no length"),
        ("#(name,3)", "'#(' takes no length"),
        ("{'a' + $(bad name)}", "a property name may contain only letters"),
    ])
    func expressionErrorsSayWhatAndWhere(value: String, reason: String) throws {
        let encodedValue = String(decoding: try JSONEncoder().encode(value), as: UTF8.self)
        let body = "{\n  \"aps\": {\"alert\": " + encodedValue + "}\n}"
        do {
            _ = try NotificationTemplate(body: body)
            Issue.record("accepted \(value)")
        } catch {
            #expect(error.code == .badRequest)
            #expect(error.message.contains(reason), "\(error.message)")
            #expect(error.message.contains("in the JSON string value at line 2, column 20"), "\(error.message)")
            #expect(error.message.hasPrefix("The template has an invalid expression \""), "\(error.message)")
        }
    }

    @Test func propertyNamesMayHave120Characters() throws {
        let name = String(repeating: "a", count: 120)
        let template = try NotificationTemplate(body: #"{"a":"$("# + name + #")"}"#)
        #expect(template.propertyNames == [name])
        #expect(throws: HeraldError.self) {
            try NotificationTemplate(body: #"{"a":"$("# + name + #"b)"}"#)
        }
        do {
            _ = try NotificationTemplate(body: #"{"a":"$("# + name + #"b)"}"#)
        } catch {
            #expect(error.message.contains("the property name is 121 characters long; at most 120 are allowed"))
            // The message quotes a shortened expression, not the whole name.
            #expect(error.message.contains("…"))
        }
    }

    @Test(arguments: [
        ("", "The template body is empty; expected a JSON or XML document."),
        ("  \n ", "The template body is empty; expected a JSON or XML document."),
        ("hello $(name)", "The template body is neither a JSON object or array nor an XML document: it must start with '{' or '[' (JSON) or '<' (XML)."),
        ("\"$(name)\"", "The template body is neither a JSON object or array nor an XML document: it must start with '{' or '[' (JSON) or '<' (XML)."),
        (#"{"a" 1}"#, "The JSON template body is malformed at line 1, column 6: expected ':' after a member name, found '1'."),
        (#"{"a":1,}"#, "The JSON template body is malformed at line 1, column 8: expected a member name in double quotes, found '}'."),
        (#"{"a":1"#, "The JSON template body is malformed at line 1, column 7: the object is not closed with '}'."),
        ("{\"a\":\n[1 2]}", "The JSON template body is malformed at line 2, column 4: expected ',' or ']' after an array element, found '2'."),
        (#"{"a":"x}"#, "The JSON template body is malformed at line 1, column 6: the string is not closed with '\"'."),
        (#"{"a":tru}"#, "The JSON template body is malformed at line 1, column 6: expected 'true', found 't'."),
        (#"{"a":01}"#, "The JSON template body is malformed at line 1, column 7: expected ',' or '}' after an object member, found '1'."),
        (#"{"a":1.}"#, "The JSON template body is malformed at line 1, column 6: a number needs digits after '.'."),
        (
            #"{"a":'x'}"#,
            "The JSON template body is malformed at line 1, column 6: expected a value (an object, array, string, number, true, false or null), found \"'\"."
        ),
        (
            #"{"a":"\x"}"#,
            "The JSON template body is malformed at line 1, column 7: '\\x' is not a JSON escape (use \\\" \\\\ \\/ \\b \\f \\n \\r \\t or \\uXXXX)."
        ),
        (#"{"a":"\ud800"}"#, "The JSON template body is malformed at line 1, column 7: \\uD800 is half of a surrogate pair without its other half."),
        ("{\"a\":\"tab\there\"}", "The JSON template body is malformed at line 1, column 10: a control character (U+0009) must be escaped inside a string."),
        (#"{"a":1} {"b":2}"#, "The JSON template body is malformed at line 1, column 9: unexpected '{' after the end of the JSON document."),
    ])
    func malformedBodiesAreRefusedWithPlace(body: String, message: String) {
        expectError(HeraldError.badRequest(message)) { try NotificationTemplate(body: body) }
    }

    @Test func deeplyNestedJSONIsRefused() throws {
        let deep = String(repeating: "[", count: 65) + String(repeating: "]", count: 65)
        #expect(throws: HeraldError.self) { try NotificationTemplate(body: deep) }
        let allowed = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        _ = try NotificationTemplate(body: allowed)
    }

    // MARK: Identity

    @Test func equalityFollowsTheBody() throws {
        let a = try NotificationTemplate(body: #"{"a":"$(x)"}"#)
        let b = try NotificationTemplate(body: #"{"a":"$(x)"}"#)
        let c = try NotificationTemplate(body: #"{"a":"$(X)"}"#)
        #expect(a == b)
        #expect(a.hashValue == b.hashValue)
        #expect(a != c)
        #expect(Set([a, b, c]).count == 2)
    }

    @Test func leadingWhitespaceIsLeftOut() throws {
        let template = try NotificationTemplate(body: "\n  {\"a\":\"$(x)\"} \n")
        #expect(template.render(["x": "1"]) == "{\"a\":\"1\"} \n")
    }

    // MARK: Plain text

    @Test func renderTextEvaluatesHeaderValues() throws {
        let properties = ["Expiry": "2030-01-01T00:00:00Z", "kind": "toast", "n": "7"]
        #expect(try NotificationTemplate.renderText("$(expiry)", properties: properties) == "2030-01-01T00:00:00Z")
        #expect(try NotificationTemplate.renderText("wns/$(kind)", properties: properties) == "wns/toast")
        #expect(try NotificationTemplate.renderText("{'wns/' + $(KIND)}", properties: properties) == "wns/toast")
        #expect(try NotificationTemplate.renderText("#(n) < 8 & \"q\"", properties: properties) == "7 < 8 & \"q\"")
        #expect(try NotificationTemplate.renderText("10", properties: properties) == "10")
        #expect(try NotificationTemplate.renderText("", properties: properties) == "")
        #expect(try NotificationTemplate.renderText(".(kind,4)%(missing)", properties: properties) == "t...")
    }

    @Test func renderTextKeepsValuesFromAddingHeaderLines() throws {
        let rendered = try NotificationTemplate.renderText("a $(v) b", properties: ["v": "x\r\nX-Injected: 1\u{0}\u{7F}\tz"])
        #expect(rendered == "a x  X-Injected: 1  \tz b")
    }

    @Test func renderTextReportsSyntaxErrors() {
        expectError(
            HeraldError.badRequest(
                "The template has an invalid expression \"$(a b)\" at character 6 of \"wns/ $(a b)\": a property name may contain only letters A–Z and a–z, digits and underscores (found 'b')."
            )
        ) {
            try NotificationTemplate.renderText("wns/ $(a b)", properties: [:])
        }
    }
}
