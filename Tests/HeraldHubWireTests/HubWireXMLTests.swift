import Foundation
import HeraldCore
import Testing

@testable import HeraldHubWire

@Suite("Hub wire: XML and dates")
struct HubWireXMLTests {
    // MARK: Dates

    static let written: [(seconds: Double, precision: XSDDateTime.Precision, text: String)] = [
        (0, .seconds, "1970-01-01T00:00:00Z"),
        (1_541_549_917, .seconds, "2018-11-07T00:18:37Z"),
        (1_541_549_917.999, .seconds, "2018-11-07T00:18:37Z"),
        (1_541_549_917.25, .milliseconds, "2018-11-07T00:18:37.25Z"),
        (1_541_549_917.1, .milliseconds, "2018-11-07T00:18:37.1Z"),
        (1_541_549_917.0004, .milliseconds, "2018-11-07T00:18:37Z"),
        (951_782_400, .seconds, "2000-02-29T00:00:00Z"),
        (-1, .seconds, "1969-12-31T23:59:59Z"),
        (-0.5, .milliseconds, "1969-12-31T23:59:59.5Z"),
        (253_402_300_799.999, .milliseconds, "9999-12-31T23:59:59.999Z"),
    ]

    @Test(arguments: written)
    func writesDates(_ c: (seconds: Double, precision: XSDDateTime.Precision, text: String)) {
        #expect(XSDDateTime.string(from: Date(timeIntervalSince1970: c.seconds), precision: c.precision) == c.text)
    }

    static let parsed: [(text: String, seconds: Double)] = [
        ("2018-11-07T00:18:37Z", 1_541_549_917),
        ("2018-11-07T00:18:37", 1_541_549_917),
        (" 2018-11-07t00:18:37z ", 1_541_549_917),
        ("2018-11-07 00:18:37Z", 1_541_549_917),
        ("2018-11-07T00:18Z", 1_541_549_880),
        ("2018-11-07T00:18:37.5Z", 1_541_549_917.5),
        ("2018-11-07T00:18:37.2500000Z", 1_541_549_917.25),
        ("2018-11-07T00:18:37.250000000001Z", 1_541_549_917.25),
        ("2018-11-07T02:18:37+02:00", 1_541_549_917),
        ("2018-11-06T19:18:37-0500", 1_541_549_917),
        ("2000-02-29T00:00:00Z", 951_782_400),
        ("1969-12-31T23:59:59Z", -1),
    ]

    @Test(arguments: parsed)
    func parsesTolerantly(_ c: (text: String, seconds: Double)) {
        #expect(XSDDateTime.date(from: c.text) == Date(timeIntervalSince1970: c.seconds))
    }

    @Test(arguments: [
        "", "2018-11-07", "18-11-07T00:18:37Z", "2018-13-07T00:18:37Z", "2019-02-29T00:00:00Z",
        "2018-11-07T24:00:00Z", "2018-11-07T00:60:00Z", "2018-11-07T00:18:37.Z", "2018-11-07T00:18:37Q",
        "2018-11-07T00:18:37+2", "2018-11-07T00:18:37Z trailing", "tomorrow",
    ])
    func refusesWhatIsNotADateTime(_ text: String) {
        #expect(XSDDateTime.date(from: text) == nil)
    }

    @Test func writesAndReadsBackAcrossTheCalendar() {
        // Every 997th day from 1600 to 9999 at a varying time of day, to millisecond precision.
        var day: Int64 = -134_774
        while day < 2_932_896 {
            let seconds = Double(day * 86_400 + (day * 7919) % 86_400) + Double(abs(day) % 1000) / 1000
            let date = Date(timeIntervalSince1970: seconds)
            let text = XSDDateTime.string(from: date, precision: .milliseconds)
            let back = XSDDateTime.date(from: text)
            #expect(back.map { abs($0.timeIntervalSince1970 - seconds) < 0.000_5 } == true, "\(text)")
            day += 997
        }
    }

    // MARK: Writer additions

    @Test(arguments: [
        ("", ""),
        ("plain", "<![CDATA[plain]]>"),
        ("<a>&amp;</a>", "<![CDATA[<a>&amp;</a>]]>"),
        ("x]]>y", "<![CDATA[x]]]]><![CDATA[>y]]>"),
        ("]]>]]>", "<![CDATA[]]]]><![CDATA[>]]]]><![CDATA[>]]>"),
        ("]>]]]>", "<![CDATA[]>]]]]]><![CDATA[>]]>"),
        ("a\r\nb", "<![CDATA[a]]>&#13;<![CDATA[\nb]]>"),
        ("\r", "&#13;"),
    ])
    func cdataKeepsEveryText(_ c: (text: String, written: String)) throws {
        var xml = XMLWriter()
        try xml.cdata(c.text)
        #expect(xml.output == c.written)
        // And a parser reads back exactly the text.
        var wrapped = XMLWriter()
        try wrapped.start("b")
        try wrapped.cdata(c.text)
        wrapped.end()
        #expect(try ParsedXMLElement.parse(Data(wrapped.output.utf8), document: "t").text == c.text)
    }

    @Test func cdataRefusesCharactersXMLCannotCarry() {
        var xml = XMLWriter()
        #expect(throws: XMLWriter.InvalidCharacter(scalar: "\u{1}")) { try xml.cdata("a\u{1}") }
    }

    @Test func emptyElementCloses() throws {
        var xml = XMLWriter()
        try xml.start("a")
        try xml.empty("b", attributes: [("c", "<\"&\">")])
        xml.end()
        #expect(xml.output == #"<a><b c="&lt;&quot;&amp;&quot;&gt;"/></a>"#)
    }

    // MARK: Parsed elements

    @Test func dropsPrefixesAndNamespaceDeclarations() throws {
        let root = try ParsedXMLElement.parse(
            Data(#"<p:a xmlns:p="urn:p" xmlns="urn:d" p:x="1" y="2"><p:b i:nil="true"/> t <c>v</c></p:a>"#.utf8),
            document: "t"
        )
        #expect(root.name == "a")
        #expect(root.attributes == ["x": "1", "y": "2"])
        #expect(root.children.map(\.name) == ["b", "c"])
        #expect(root.child("b")?.isNil == true)
        #expect(root.value("b") == nil)
        #expect(root.value("c") == "v")
        #expect(root.trimmedText == "t")
    }

    @Test(arguments: [
        "<!DOCTYPE a><a/>",
        "\u{FEFF}<?xml version=\"1.0\"?>\n<!-- c --> <!DOCTYPE a [<!ENTITY e \"x\">]><a>&e;</a>",
    ])
    func refusesDocumentTypeDeclarations(_ text: String) {
        let error = #expect(throws: HeraldError.self) { try ParsedXMLElement.parse(Data(text.utf8), document: "body") }
        #expect(error?.message == "the body must not contain a document type declaration (<!DOCTYPE …>)")
    }

    @Test func aDoctypeInsideCDATAIsJustText() throws {
        let root = try ParsedXMLElement.parse(Data("<a><![CDATA[<!DOCTYPE x>]]></a>".utf8), document: "t")
        #expect(root.text == "<!DOCTYPE x>")
    }
}
