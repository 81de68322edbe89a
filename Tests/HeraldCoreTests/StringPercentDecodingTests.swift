import Foundation
import HeraldCore
import Testing

/// The percent decoder stands in for Foundation's `removingPercentEncoding`: the same text, or
/// `nil` for the same inputs, on every escape of a byte, on escapes that are cut short or not
/// hex, on UTF-8 sequences whole and broken, and on seeded random mixtures of them.
///
/// One difference: Foundation on Linux turns an escaped lone byte 0xA9 (of all the bytes that
/// cannot begin a UTF-8 character) into U+FFFD, where its documentation, and this decoder,
/// give `nil` for bytes that are not UTF-8.
@Suite struct StringPercentDecodingTests {
    /// Whether the two decoders agree, the difference above aside.
    static func agree(_ text: String) -> Bool {
        let foundation = text.removingPercentEncoding
        if foundation?.contains("\u{FFFD}") == true, !text.contains("\u{FFFD}") { return text.percentDecoded() == nil }
        return text.percentDecoded() == foundation
    }

    @Test func decodesEveryByteAsFoundationDoes() {
        var different: [String] = []
        for byte in 0...255 {
            for text in [String(format: "%%%02X", byte), String(format: "a%%%02xb", byte), String(format: "%%%02X%%%02X", byte, byte)] {
                if !Self.agree(text) { different.append(text) }
            }
        }
        #expect(different.isEmpty, "\(different.prefix(10))")
    }

    @Test func agreesOnTextsWholeAndBroken() {
        let texts = [
            "", "plain", "a+b", "%", "%4", "%4g", "%g4", "100%", "%%41", "%41%", "%C3%A9t%C3%A9", "%c3%a9", "%C3", "%C3%28", "%E2%82%AC",
            "%F0%9F%98%80", "%F0%9F%98", "%ED%A0%80", "%00", "é%20é", "device%23one%40home", "%2B", "sr=https%3A%2F%2Fh%2Fhub",
        ]
        for text in texts {
            #expect(Self.agree(text), "\(text)")
            #expect(Substring(text).percentDecoded() == text.percentDecoded(), "\(text)")
        }
    }

    @Test func agreesOnSeededMixtures() {
        var generator = SplitMix64(seed: 0x2545)
        let pieces = ["%", "%4", "%41", "%C3", "%A9", "%e2", "%82", "%AC", "%zz", "+", "a", "é", "/", "%2F", "%F0", "%9F", "%98", "%80"]
        for _ in 0..<4_000 {
            let text = (0..<Int.random(in: 1...8, using: &generator)).map { _ in pieces.randomElement(using: &generator)! }.joined()
            #expect(Self.agree(text), "\(text)")
        }
    }

    @Test func aByteThatIsNotUTF8IsRefused() {
        #expect("%A9".percentDecoded() == nil)
        #expect("%C3%A9".percentDecoded() == "é")
    }

    @Test func aFormQueryReadsPlusAsASpace() {
        #expect("ChannelUri+eq+%27a%2Bb%27".percentDecoded(plusIsSpace: true) == "ChannelUri eq 'a+b'")
        #expect("a+b".percentDecoded() == "a+b")
        #expect("a+b%".percentDecoded(plusIsSpace: true) == nil)
    }
}
