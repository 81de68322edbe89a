import Foundation
import HeraldSQLite
import HeraldStore
import HeraldStoreConformance
import Testing

@Suite("Writing and reading stored tag arrays")
struct PlainJSONStringsTests {
    @Test(
        arguments: [
            ("[]", []),
            (#"[""]"#, [""]),
            (#"["a"]"#, ["a"]),
            (#"["news","sports","$InstallationId:{i-1}","é✓"]"#, ["news", "sports", "$InstallationId:{i-1}", "é✓"]),
        ] as [(String, [String])])
    func plainArraysAreRead(text: String, strings: [String]) {
        #expect(PlainJSONStrings.parse(text) == strings)
    }

    /// Not the plain form (left to JSONDecoder), or not JSON at all.
    @Test(arguments: [
        "", "[", "]", "[,]", #"["a",]"#, #"["a""b"]"#, #"["a" ]"#, #"[ "a"]"#, #"["a"#, #""a""#, #"["a\"b"]"#, #"["a\/b"]"#,
        #"["\u0041"]"#, "[\"a\u{1}\"]", "[1]", #"["a",1]"#, "{}", "null",
    ])
    func anythingElseIsLeftToJSONDecoder(text: String) {
        #expect(PlainJSONStrings.parse(text) == nil)
    }

    @Test func plainStringsAreWrittenWithoutEscapes() {
        #expect(PlainJSONStrings.encode([]) == "[]")
        #expect(PlainJSONStrings.encode(["a"]) == #"["a"]"#)
        #expect(PlainJSONStrings.encode(["a/b", "$UserId:{x}", "é"]) == #"["a/b","$UserId:{x}","é"]"#)
        #expect(PlainJSONStrings.encode([#"a"b"#]) == nil)
        #expect(PlainJSONStrings.encode([#"a\b"#]) == nil)
        #expect(PlainJSONStrings.encode(["ok", "a\u{1F}"]) == nil)
    }

    /// Whatever either side writes, both sides read the same.
    @Test func agreesWithTheFoundationCoders() throws {
        var generator = SeededGenerator(seed: 4)
        let alphabet = Array("ab:{}$-_@#.=\"\\/ é\u{7}")
        let escaped: Set<Character> = ["\"", "\\", "\u{7}"]
        for _ in 0..<2000 {
            let strings = (0..<Int.random(in: 0...4, using: &generator)).map { _ in
                String((0..<Int.random(in: 0...6, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! })
            }
            let needsEscapes = strings.contains { $0.contains { escaped.contains($0) } }

            let encoded = String(decoding: try JSONEncoder().encode(strings), as: UTF8.self)
            if let parsed = PlainJSONStrings.parse(encoded) {
                #expect(parsed == strings, "\(encoded)")
            } else {
                // Foundation also escapes "/".
                #expect(needsEscapes || strings.contains { $0.contains("/") }, "\(encoded) was not read")
            }

            if let written = PlainJSONStrings.encode(strings) {
                #expect(!needsEscapes)
                #expect(try JSONDecoder().decode([String].self, from: Data(written.utf8)) == strings, "\(written)")
                #expect(PlainJSONStrings.parse(written) == strings)
            } else {
                #expect(needsEscapes)
            }
        }
    }
}
