cluster2_stop() { :; }
