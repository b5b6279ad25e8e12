//! Raw AF_PACKET sockets bound to one interface of one namespace, and moving a thread into
//! a namespace.

use std::time::{Duration, Instant};

/// Moves the calling thread into namespace `ns` (setns affects only this thread).
pub fn enter_netns(ns: &str) {
    let path = std::ffi::CString::new(format!("/var/run/netns/{ns}")).unwrap();
    // SAFETY: plain open/setns/close on a path we built.
    unsafe {
        let nsfd = libc::open(path.as_ptr(), libc::O_RDONLY);
        assert!(nsfd >= 0, "open netns {ns}");
        assert_eq!(libc::setns(nsfd, libc::CLONE_NEWNET), 0, "setns {ns}");
        libc::close(nsfd);
    }
}

/// A raw AF_PACKET socket bound to one interface of one namespace.
pub struct RawSocket(i32);

impl RawSocket {
    pub fn open(ns: &str, iface: &str) -> Self {
        let (ns, iface) = (ns.to_string(), iface.to_string());
        // setns affects only the calling thread; the socket keeps its namespace afterwards.
        let fd = std::thread::spawn(move || unsafe {
            let path = std::ffi::CString::new(format!("/var/run/netns/{ns}")).unwrap();
            let nsfd = libc::open(path.as_ptr(), libc::O_RDONLY);
            assert!(nsfd >= 0, "open netns {ns}");
            assert_eq!(libc::setns(nsfd, libc::CLONE_NEWNET), 0, "setns {ns}");
            libc::close(nsfd);
            // Protocol 0 receives nothing until bind names the interface: a socket opened
            // with ETH_P_ALL would queue every interface's frames (the controller's loopback
            // gRPC and Thrift among them) until bind, and a test would read one as a stray.
            let proto = (libc::ETH_P_ALL as u16).to_be();
            let fd = libc::socket(libc::AF_PACKET, libc::SOCK_RAW, 0);
            assert!(fd >= 0, "AF_PACKET socket");
            let name = std::ffi::CString::new(iface.clone()).unwrap();
            let ifindex = libc::if_nametoindex(name.as_ptr());
            assert!(ifindex > 0, "no interface {iface} in {ns}");
            let mut sll: libc::sockaddr_ll = std::mem::zeroed();
            sll.sll_family = libc::AF_PACKET as u16;
            sll.sll_protocol = proto;
            sll.sll_ifindex = ifindex as i32;
            let len = std::mem::size_of::<libc::sockaddr_ll>() as u32;
            assert_eq!(
                libc::bind(fd, &sll as *const _ as *const libc::sockaddr, len),
                0
            );
            fd
        })
        .join()
        .unwrap();
        RawSocket(fd)
    }

    pub fn send(&self, frame: &[u8]) {
        // SAFETY: fd is a bound packet socket, the buffer is valid for its length.
        let n = unsafe { libc::send(self.0, frame.as_ptr().cast(), frame.len(), 0) };
        assert_eq!(n, frame.len() as isize, "send");
    }

    /// Incoming frames (not our own outgoing ones) until `pred` accepts one or `timeout`.
    pub fn recv_until(&self, timeout: Duration, pred: impl Fn(&[u8]) -> bool) -> Option<Vec<u8>> {
        let deadline = Instant::now() + timeout;
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match self.recv_timeout(left) {
                Some(frame) if pred(&frame) => return Some(frame),
                _ => continue,
            }
        }
        None
    }

    /// The next incoming frame (not our own outgoing ones), or `None` after `timeout`.
    pub fn recv_timeout(&self, timeout: Duration) -> Option<Vec<u8>> {
        let deadline = Instant::now() + timeout;
        let mut buf = vec![0u8; 9216];
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            let mut pfd = libc::pollfd {
                fd: self.0,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd.
            let r = unsafe { libc::poll(&mut pfd, 1, left.as_millis().max(1) as i32) };
            if r <= 0 {
                continue;
            }
            let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
            let mut len = std::mem::size_of::<libc::sockaddr_ll>() as u32;
            // SAFETY: buffers are valid for the lengths given.
            let n = unsafe {
                libc::recvfrom(
                    self.0,
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                    0,
                    &mut sll as *mut _ as *mut libc::sockaddr,
                    &mut len,
                )
            };
            if n < 0 || sll.sll_pkttype == libc::PACKET_OUTGOING {
                continue;
            }
            return Some(buf[..n as usize].to_vec());
        }
        None
    }

    /// Sets the kernel receive buffer (SO_RCVBUFFORCE, root) so bursts are not dropped at the
    /// socket while the reader is descheduled.
    pub fn set_recv_buffer(&self, bytes: i32) {
        // SAFETY: setsockopt on the fd this value owns with a valid int.
        let r = unsafe {
            libc::setsockopt(
                self.0,
                libc::SOL_SOCKET,
                libc::SO_RCVBUFFORCE,
                (&bytes as *const i32).cast(),
                std::mem::size_of::<i32>() as u32,
            )
        };
        assert_eq!(r, 0, "SO_RCVBUFFORCE");
    }
}

impl Drop for RawSocket {
    fn drop(&mut self) {
        // SAFETY: closing the fd this value owns.
        unsafe { libc::close(self.0) };
    }
}
