#include "storage/parked.h"

namespace herdless {

void ParkedReaders::Park(std::string_view key, const WaitTicket& ticket) {
  auto it = by_key_.find(key);
  if (it == by_key_.end()) it = by_key_.emplace(std::string(key), Waiters()).first;
  it->second.parks++;
  for (WaitTicket& t : it->second.tickets) {
    if (t.worker == ticket.worker && t.conn_id == ticket.conn_id) {
      t = ticket;
      return;
    }
  }
  it->second.tickets.push_back(ticket);
}

size_t ParkedReaders::Wake(std::string_view key) {
  auto it = by_key_.find(key);
  if (it == by_key_.end()) return 0;
  const size_t parks = it->second.parks;
  woken_.insert(woken_.end(), it->second.tickets.begin(), it->second.tickets.end());
  by_key_.erase(it);
  return parks;
}

void ParkedReaders::WakeAll() {
  for (auto& [key, waiters] : by_key_) woken_.insert(woken_.end(), waiters.tickets.begin(), waiters.tickets.end());
  by_key_.clear();
}

}  // namespace herdless
