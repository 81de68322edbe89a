import Foundation
import HeraldCore
import Testing

/// The trims stand in for Foundation's: for every scalar where white space lives (below U+3100,
/// and U+FEFF) and every 61st beyond, at either end and alone.
@Suite struct StringTrimmingTests {
    static let scalars: [Unicode.Scalar] = (Array(0..<0x3100) + [0xFEFF] + Array(stride(from: 0x3100, through: 0x10FFFF, by: 61)))
        .compactMap(Unicode.Scalar.init)

    @Test func trimsWhatFoundationTrims() {
        var different: [String] = []
        for scalar in Self.scalars {
            for text in ["\(scalar)", "\(scalar)a\(scalar)b\(scalar)"] {
                if text.trimmingWhitespace() != text.trimmingCharacters(in: .whitespacesAndNewlines)
                    || text.trimmingSpaces() != text.trimmingCharacters(in: .whitespaces)
                {
                    different.append(String(scalar.value, radix: 16))
                }
            }
        }
        #expect(different.isEmpty, "U+\(different.prefix(10))")
    }

    @Test func keepsWhatIsBetween() {
        #expect("  a b\n".trimmingWhitespace() == "a b")
        #expect(" \ta b\n".trimmingSpaces() == "a b\n")
        #expect("\u{3000}é\u{A0}".trimmingSpaces() == "é")
        #expect("".trimmingWhitespace() == "")
        #expect(" e\u{301} ".trimmingWhitespace() == "e\u{301}")
        #expect("x"[...].trimmingSpaces() == "x")
    }
}
