package iptables

// defaultNames are the names of the default instance.
var defaultNames = newIPTNames("", false)
