package wire

import "net"

// setSocketOptions applies socket.send.buffer.bytes to an accepted
// connection, as Kafka does (Kafka's default is 100 KiB; -1 keeps the OS
// default).
//
// Why it matters for CPU: with the OS default the send buffer autotunes up
// to net.ipv4.tcp_wmem's maximum (4 MiB here), so one sendfile(2) of a
// 1 MiB fetch section queues all of it at once and the broker's thread also
// runs the transmit work for every segment. With 100 KiB the transfer is
// paced by the receiver's acknowledgements: on loopback, consuming 1 GiB of
// 1 KiB records took 0.17–0.19 instead of 0.20–0.29 broker CPU s/GB, the
// system part 0.11–0.14 instead of 0.19–0.26, and the consumer's own CPU fell
// too (docs/performance.md). The receive buffer is left to the OS: a fixed
// one made produce dearer (see socket.receive.buffer.bytes).
//
// A failure is ignored: the connection still works with the OS's buffer.
func (s *Server) setSocketOptions(nc net.Conn) {
	if s.cfg.SendBufferBytes <= 0 {
		return
	}
	if c, ok := nc.(interface{ SetWriteBuffer(int) error }); ok {
		_ = c.SetWriteBuffer(s.cfg.SendBufferBytes)
	}
}
