import Foundation
import HeraldCore
import Testing

/// `JSONValue(parsing:)` against `JSONDecoder`, which it stands in for: the same texts are
/// accepted, with the same value, and the same are refused.
@Suite("JSON values read from bytes")
struct JSONValueParsingTests {
    static func decoded(_ text: String) -> JSONValue? {
        try? JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
    }

    static let accepted: [String] = [
        "{}", "[]", "0", "-0", "1", "-1", "12345678901234567890", "0.5", "-0.25e+2", "1E3", "1e-3", "0e-400", "0.000e-999", "5e-324",
        "true", "false", "null", #""""#, #""a""#, " \t\r\n {} \n",
        #"{"Platform":"apns","Handle":"\#(String(repeating: "ab", count: 32))","Tags":["a","b:c"]}"#,
        #"{"b":1,"a":[1,2,{"c":null}],"d":{"e":[]}}"#,
        #"{"aps":{"alert":{"title":"Hello","body":"Wörld ✓ 👍"},"badge":3,"sound":"default"},"x":1.5}"#,
        #""\"\\\/\b\f\n\r\t""#, #""\u0041\u00e9\u20AC\uD83D\uDC4D""#, #""\u0000""#, #""a\u0000b""#,
        #"[1,[2,[3,[4]]],"x",true,null,-3.5e10]"#,
        #"{"a":1,"a":2}"#, #"{"z":1,"y":2,"z":3}"#, "[1,]", "[1 , ] ", #"{"a":1,}"#, #"{"a":[],"b":{},}"#,
        "[" + String(repeating: "[", count: 100) + String(repeating: "]", count: 100) + "]",
        #"{"é":1,"e":2,"E":3,"":4}"#,
    ]

    @Test(arguments: accepted)
    func readsWhatJSONDecoderReadsTheSame(_ text: String) throws {
        let parsed = try JSONValue(parsing: Data(text.utf8))
        #expect(parsed == Self.decoded(text), "\(text)")
        #expect(try JSONValue(parsing: text) == parsed)
        #expect(try JSONValue(parsing: Array(text.utf8)) == parsed)
    }

    static let refused: [String] = [
        "", " ", "{", "}", "[", "[,]", "[1,,]", "[1 2]", "{,}", #"{"a":1,,}"#, #"{"a"}"#, #"{"a":}"#, #"{a:1}"#, "{'a':1}",
        "01", "-", "1.", ".5", "1e", "1e+", "+1", "0x10", "1e400", "-1e400", "2.5E-400", "1e-400", "NaN", "Infinity", "tru", "nul", "falsey",
        #""abc"#, #""\x""#, #""\u12""#, #""\u12G4""#, #""\uD83D""#, #""\uDC4D""#, #""\uD83Dx""#, #""\uD83D\u0041""#,
        "\"a\tb\"", "\"a\nb\"", "{} {}", "[] x", "// c\n{}", "{}/**/", "[1]]",
        String(repeating: "[", count: 600) + String(repeating: "]", count: 600),
    ]

    @Test(arguments: refused)
    func refusesWhatJSONDecoderRefuses(_ text: String) {
        #expect(Self.decoded(text) == nil, "JSONDecoder reads \(text)")
        #expect(throws: JSONValue.SyntaxError.self, "\(text)") { try JSONValue(parsing: Data(text.utf8)) }
    }

    @Test func refusesInvalidUTF8InAString() {
        for bytes: [UInt8] in [[0x22, 0xFF, 0x22], [0x22, 0xC3, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22], [0x22, 0x5C, 0x6E, 0xC3, 0x22]] {
            #expect(throws: JSONValue.SyntaxError.self) { try JSONValue(parsing: bytes) }
            #expect((try? JSONDecoder().decode(JSONValue.self, from: Data(bytes))) == nil)
        }
    }

    @Test func refusesANULAfterTheValue() {
        #expect(throws: JSONValue.SyntaxError(reason: "unexpected text after the value", offset: 1)) {
            try JSONValue(parsing: [UInt8(ascii: "0"), 0x00])
        }
    }

    @Test func namesWhereTheTextGoesWrong() {
        #expect(throws: JSONValue.SyntaxError(reason: "expected ',' or ']' in an array", offset: 3)) {
            try JSONValue(parsing: "[1 2]")
        }
        #expect(throws: JSONValue.SyntaxError(reason: "a number has no leading zero", offset: 6)) {
            try JSONValue(parsing: #"{"a": 01}"#)
        }
    }

    /// Texts made from valid ones by changing, dropping or repeating a byte: whatever
    /// `JSONDecoder` makes of each, the parser makes the same (a seed names a failure).
    @Test func agreesWithJSONDecoderOnMutatedTexts() {
        var random = SplitMix64(seed: 0x4A53_4F4E)
        // No NUL outside a string: `JSONDecoder` reads a value followed by one (as the end of a C
        // string), which the parser refuses (`refusesANULAfterTheValue`).
        let alphabet = Array(#"{}[]:,"\ -+.eE0123456789tfnulrsaéu"#.utf8) + [0x09, 0x0A, 0xC3, 0xFF]
        var disagreements: [String] = []
        for _ in 0..<4_000 {
            var bytes = Array(random.pick(Self.accepted).utf8)
            for _ in 0...random.int(below: 3) where !bytes.isEmpty {
                let at = random.int(below: bytes.count)
                switch random.int(below: 3) {
                case 0: bytes[at] = random.pick(alphabet)
                case 1: bytes.remove(at: at)
                default: bytes.insert(bytes[at], at: at)
                }
            }
            let expected = try? JSONDecoder().decode(JSONValue.self, from: Data(bytes))
            let parsed = try? JSONValue(parsing: bytes)
            if expected != parsed { disagreements.append(String(decoding: bytes, as: UTF8.self)) }
        }
        #expect(disagreements.isEmpty, "\(disagreements.prefix(10))")
    }
}

/// `member(_:)`: a field found by its name, in any case of its ASCII letters.
@Suite struct JSONValueMemberTests {
    @Test func findsTheExactNameFirstThenAnyCaseOfItsLetters() throws {
        let body = try JSONValue(parsing: #"{"PLATFORM":"fcm","platform":"apns","Tags":["a"],"handle":"h","Ünit":1}"#)
        #expect(body.member("platform") == .string("apns"))
        #expect(body.member("Platform") == .string("fcm"), "no exact name: the first spelling in another case")
        #expect(body.member("tags") == .array([.string("a")]))
        #expect(body.member("HANDLE") == .string("h"))
        #expect(body.member("ünit") == nil, "only ASCII letters match in another case")
        #expect(body.member("hand") == nil)
        #expect(body.member("handlex") == nil)
        #expect(JSONValue.array([]).member("a") == nil)
    }
}
