import HeraldCore
import Testing

@Suite("XML writer")
struct XMLWriterTests {
    @Test func escapesTextAndAttributes() throws {
        var xml = XMLWriter()
        try xml.start("a", attributes: [("x", "1 < 2 & \"q\" 'a'\t\n\r>")])
        try xml.text("<&>\"'\t\n\r")
        try xml.element("b", text: "")
        xml.end()
        #expect(
            xml.output
                == #"<a x="1 &lt; 2 &amp; &quot;q&quot; &apos;a&apos;&#9;&#10;&#13;&gt;">&lt;&amp;&gt;&quot;&apos;"#
                + "\t\n" + "&#13;<b></b></a>"
        )
    }

    @Test(arguments: [0x0, 0x1, 0x1F, 0xFFFE, 0xFFFF] as [UInt32])
    func refusesCharactersXMLCannotCarry(value: UInt32) throws {
        let scalar = try #require(Unicode.Scalar(value))
        var xml = XMLWriter()
        #expect(throws: XMLWriter.InvalidCharacter(scalar: scalar)) { try xml.text("a" + String(scalar)) }
        #expect(throws: XMLWriter.InvalidCharacter(scalar: scalar)) {
            try xml.start("a", attributes: [("v", String(scalar))])
        }
    }

    @Test(arguments: [0x7F, 0x85, 0xD7FF, 0xE000, 0xFFFD, 0x10000, 0x10FFFF] as [UInt32])
    func carriesOtherCharacters(value: UInt32) throws {
        let scalar = try #require(Unicode.Scalar(value))
        var xml = XMLWriter()
        try xml.text(String(scalar))
        #expect(xml.output == String(scalar))
    }

    @Test func namesTheCharacter() {
        #expect(XMLWriter.InvalidCharacter(scalar: "\u{1}").name == "U+0001")
        #expect(XMLWriter.InvalidCharacter(scalar: "\u{FFFE}").name == "U+FFFE")
    }
}
