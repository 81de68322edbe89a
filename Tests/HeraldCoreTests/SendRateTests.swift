import HeraldCore
import Testing

@Suite struct SendRateTests {
    @Test(arguments: [
        ("600000/min", 600_000), ("10000/s", 600_000), ("3600/h", 60), ("250", 250), ("5/S", 300), ("90/minute", 90),
    ])
    func ratesParseInEveryUnit(text: String, perMinute: Int) throws {
        #expect(try SendRate(parsing: text).perMinute == perMinute)
    }

    @Test(arguments: ["", "0/min", "-5/min", "ten/min", "10/day", "59/h", "1/min/s", "2000000000/min", "9223372036854775807/s"])
    func badRatesAreRefusedWithTheirText(text: String) {
        #expect {
            try SendRate(parsing: text)
        } throws: { error in
            (error as? HeraldError)?.code == .badRequest && (error as? HeraldError)?.message.contains(text) == true
        }
    }

    @Test func aRateIsStoredAsSendsPerMinute() throws {
        let rate = try SendRate(parsing: "100/s")
        #expect(rate.description == "6000/min")
        #expect(rate.perSecond == 100)
    }
}
