package import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension SocketAddress {
    /// The key a per-client limit (sign-in, sign-up, connections) counts this peer under: an
    /// IPv4 address whole, an IPv4-mapped IPv6 address (`::ffff:192.0.2.1`, a dual-stack
    /// listener's IPv4 client) as that IPv4 address, and any other IPv6 address by its /64
    /// prefix (`2001:db8:1:2::/64`): one home or host gets a /64, and rotating through its
    /// 2⁶⁴ addresses must not buy fresh limits.
    package var clientKey: String {
        switch self {
        case .v4:
            return ipAddress ?? "unknown"
        case .v6(let address):
            let bytes = withUnsafeBytes(of: address.address.sin6_addr) { Array($0) }
            if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xff, bytes[11] == 0xff {
                return "\(bytes[12]).\(bytes[13]).\(bytes[14]).\(bytes[15])"
            }
            let groups = stride(from: 0, to: 8, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
            return groups.joined(separator: ":") + "::/64"
        case .unixDomainSocket:
            return "local"
        }
    }

    /// ``clientKey`` of an address that may be missing (`unknown`).
    package static func clientKey(_ address: SocketAddress?) -> String {
        address?.clientKey ?? "unknown"
    }
}
