import HeraldCore
import Testing

@Suite struct IntGroupedTests {
    /// Thousands separated by commas whatever the locale, so that logs and tables read the same
    /// everywhere.
    @Test func groupedDigits() {
        #expect(0.grouped == "0")
        #expect(999.grouped == "999")
        #expect(1_000.grouped == "1,000")
        #expect(12_345_678.grouped == "12,345,678")
        #expect((-4_500).grouped == "-4,500")
    }
}
