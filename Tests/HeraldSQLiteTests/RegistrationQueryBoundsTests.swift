import HeraldStore
import Testing

/// The upper bound that turns a handle prefix into a range of the handle index.
@Suite struct RegistrationQueryBoundsTests {
    @Test(arguments: [
        ("abc", "abd"), ("a%_", "a%`"), ("a\u{10FFFF}", "b"), ("x\u{D7FF}", "x\u{E000}"), ("ÿ", "Ā"),
    ])
    func theBoundIsTheLeastStringAboveThePrefix(prefix: String, bound: String) {
        #expect(RegistrationQuery(handlePrefix: prefix).handleUpperBound == bound)
        #expect(Array((prefix + "\u{10FFFF}zzz").utf8).lexicographicallyPrecedes(Array(bound.utf8)))
    }

    @Test func noBoundWithoutAPrefixOrAboveTheLastCharacter() {
        #expect(RegistrationQuery().handleUpperBound == nil)
        #expect(RegistrationQuery(handlePrefix: "").handleUpperBound == nil)
        #expect(RegistrationQuery(handlePrefix: "\u{10FFFF}").handleUpperBound == nil)
    }
}
