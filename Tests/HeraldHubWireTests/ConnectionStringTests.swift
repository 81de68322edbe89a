import HeraldCore
import HeraldHubWire
import Testing

@Suite("Connection strings")
struct ConnectionStringTests {
    @Test func parsesTheUsualForm() throws {
        let connection = try ConnectionString(
            parsing:
                "Endpoint=sb://localhost:8443/;SharedAccessKeyName=DefaultFullSharedAccessSignature;SharedAccessKey=c2VjcmV0a2V5MTIzNDU2Nzg5MA=="
        )
        #expect(connection.endpoint == "sb://localhost:8443/")
        #expect(connection.keyName == "DefaultFullSharedAccessSignature")
        #expect(connection.key == "c2VjcmV0a2V5MTIzNDU2Nzg5MA==")
        #expect(connection.entityPath == nil)
        #expect(connection.httpsBaseURL == "https://localhost:8443/")
    }

    @Test func toleratesOrderSpacesCaseTrailingSemicolonAndUnknownParts() throws {
        let connection = try ConnectionString(
            parsing:
                "  sharedaccesskey = k=ey== ; SHAREDACCESSKEYNAME=Listen;TransportType=Amqp; endpoint=sb://hub.example.com ;EntityPath=myhub; "
        )
        #expect(connection.endpoint == "sb://hub.example.com")
        #expect(connection.keyName == "Listen")
        #expect(connection.key == "k=ey==")
        #expect(connection.entityPath == "myhub")
        #expect(connection.httpsBaseURL == "https://hub.example.com/")
    }

    @Test func keepsHTTPAndHTTPSEndpoints() throws {
        let plain = ConnectionString(endpoint: "http://127.0.0.1:8080", keyName: "n", key: "k")
        #expect(plain.httpsBaseURL == "http://127.0.0.1:8080/")
        let secure = ConnectionString(endpoint: "HTTPS://h.example/", keyName: "n", key: "k")
        #expect(secure.httpsBaseURL == "https://h.example/")
        let sb = ConnectionString(endpoint: "SB://h.example:9/", keyName: "n", key: "k")
        #expect(sb.httpsBaseURL == "https://h.example:9/")
    }

    @Test func rendersTheStringItWasParsedFrom() throws {
        let text = "Endpoint=sb://localhost:8443/;SharedAccessKeyName=Full;SharedAccessKey=abc="
        let connection = try ConnectionString(parsing: text)
        #expect(connection.description == text)
        #expect(try ConnectionString(parsing: connection.description) == connection)

        var scoped = ConnectionString(endpoint: "sb://h/", keyName: "n", key: "k")
        scoped.entityPath = "hub"
        #expect(scoped.description == "Endpoint=sb://h/;SharedAccessKeyName=n;SharedAccessKey=k;EntityPath=hub")
    }

    static let invalid: [(text: String, message: String)] = [
        ("SharedAccessKeyName=n;SharedAccessKey=k", "the connection string has no Endpoint"),
        ("Endpoint=;SharedAccessKeyName=n;SharedAccessKey=k", "the connection string has no Endpoint"),
        ("Endpoint=sb://h/;SharedAccessKey=k", "the connection string has no SharedAccessKeyName"),
        ("Endpoint=sb://h/;SharedAccessKeyName=n", "the connection string has no SharedAccessKey "),
        ("Endpoint=sb://h/;SharedAccessKeyName=n;SharedAccessKey=", "the connection string has no SharedAccessKey "),
        ("Endpoint=localhost:8443;SharedAccessKeyName=n;SharedAccessKey=k", "Endpoint is not a URL with a host"),
        ("Endpoint=ftp://h/;SharedAccessKeyName=n;SharedAccessKey=k", "Endpoint is not a URL with a host"),
        ("Endpoint=sb:///;SharedAccessKeyName=n;SharedAccessKey=k", "Endpoint is not a URL with a host"),
        ("Endpoint=sb://h/;SharedAccessKeyName=n;secretvalue", "part 3 has no '='"),
        (
            "Endpoint=sb://h/;=v;SharedAccessKeyName=n;SharedAccessKey=k",
            "part 2 of the connection string has a value but no name"
        ),
        (
            "Endpoint=sb://h/;SharedAccessKeyName=n;SharedAccessKey=k;sharedaccesskey=j",
            "gives SharedAccessKey more than once"
        ),
        ("", "the connection string has no Endpoint"),
    ]

    @Test(arguments: invalid)
    func refusesWithAClearMessage(_ example: (text: String, message: String)) {
        #expect {
            try ConnectionString(parsing: example.text)
        } throws: { error in
            guard let error = error as? HeraldError else { return false }
            return error.code == .badRequest && error.message.contains(example.message)
        }
    }

    @Test func errorsNeverShowTheKey() {
        #expect {
            try ConnectionString(parsing: "Endpoint=sb://h/;SharedAccessKeyName=n;SharedAccessKey=topsecret;topsecret2")
        } throws: { error in
            let message = (error as? HeraldError)?.message ?? ""
            return !message.isEmpty && !message.contains("topsecret")
        }
    }
}
